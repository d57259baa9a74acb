// Order-preserving keys of IEEE floats (FLOAT32 or FLOAT16), as u32.
// Comparisons on float values could ignore NaN, the sign of zero or subnormals
// (WGSL allows it), so the shader compares these integer keys only.
// Constants: F_SIGN, F_ABS, F_INF (the format's sign bit, magnitude mask, +inf),
// MINIMIZE, NAN_PROPAGATE.

// NaN is below every number (ignore) or above every number (propagate). No number
// maps to 0 or 0xffffffff: those keys belong to NaN bit patterns.
const NAN_KEY: u32 = select(0u, 0xffffffffu, NAN_PROPAGATE);

// Four elements' keys at once (the shaders fold 16-byte quads); key_of_bits is one lane.
fn key_of_bits4(b: vec4<u32>) -> vec4<u32> {
    let magnitude = b & vec4<u32>(F_ABS);
    // Negative numbers reverse their order; -0.0 takes +0.0's key (they tie).
    let negative = ((b & vec4<u32>(F_SIGN)) != vec4<u32>(0u)) & (magnitude != vec4<u32>(0u));
    var k = select(magnitude | vec4<u32>(F_SIGN), vec4<u32>(F_SIGN - 1u) - magnitude, negative);
    if (MINIMIZE) {
        k = ~k;
    }
    return select(k, vec4<u32>(NAN_KEY), magnitude > vec4<u32>(F_INF));
}

// The skip test of the batched walk (walk_batched.wgsl): whether a quad may hold an element
// that beats a best of key t, from the raw bits, a few operations a word. Once the best is a
// positive number (argmax), only a non-negative pattern above the best's beats it: the
// quad's largest lane as a signed integer decides. Once it is a negative number (argmin),
// only a negative pattern of larger magnitude: the largest lane as an unsigned integer.
// NaN patterns lie beyond both, so those of one sign pass (their exact keys then lose);
// under NAN_PROPAGATE every NaN must pass, and is looked for apart. Any other best (the
// walk's start, a zero, NaN) lets every quad pass. Lanes are compared in a word's top BITS.

const QUICK_FLIP: u32 = select(F_SIGN * LANE_ONES, 0u, MINIMIZE);  // signed order as unsigned

// The limit that quick_passes compares a quad's largest lane with (0: every quad passes).
fn quick_limit(t: Key) -> u32 {
    let up = select(t, ~t, MINIMIZE);  // the best's ascending key (key_of_bits4)
    let tie = select(0u, 1u, INCREASING);  // a tie with the best wins only under DECREASING
    if (!MINIMIZE) {
        if (up <= F_SIGN || up > (F_SIGN | F_INF)) {
            return 0u;
        }
        return (((up & F_ABS) + tie) ^ F_SIGN) << (32u - BITS);
    }
    if (up >= F_SIGN || up < F_SIGN - 1u - F_INF) {
        return 0u;
    }
    return ((F_SIGN | (F_SIGN - 1u - up)) + tie) << (32u - BITS);
}

fn quick_passes(words: vec4<u32>, limit: u32) -> bool {
    let flipped = words ^ vec4<u32>(QUICK_FLIP);
    var top = flipped;
    if (BITS == 16u) {
        top = max(flipped & vec4<u32>(0xffff0000u), flipped << vec4<u32>(16u));
    }
    var passes = max(max(top.x, top.y), max(top.z, top.w)) >= limit;
    if (NAN_PROPAGATE) {
        let magnitude = words & vec4<u32>(F_ABS * LANE_ONES);
        let above_inf = (magnitude + vec4<u32>((F_SIGN - 1u - F_INF) * LANE_ONES)) & vec4<u32>(F_SIGN * LANE_ONES);
        passes = passes || any(above_inf != vec4<u32>(0u));
    }
    return passes;
}
