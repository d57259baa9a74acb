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
    if (NO_KEYS) {  // a timing experiment (Tuning.bound_no_keys): no key work, wrong answers
        return b;
    }
    let magnitude = b & vec4<u32>(F_ABS);
    // Negative numbers (patterns above the sign bit alone) reverse their order; -0.0 is the
    // sign bit alone and takes +0.0's key (they tie). b holds no bits above the format's.
    var k = select(magnitude | vec4<u32>(F_SIGN), vec4<u32>(F_SIGN - 1u) - magnitude, b > vec4<u32>(F_SIGN));
    if (MINIMIZE) {
        k = ~k;
    }
    return select(k, vec4<u32>(NAN_KEY), magnitude > vec4<u32>(F_INF));
}

// The skip test of the batched walk (walk_batched.wgsl): whether a quad may hold an element
// that beats a best of key t, from the raw bits, a few operations a word. Once the best is a
// positive number (argmax), only a non-negative pattern above the best's beats it: the lane
// as a signed integer decides. Once it is a negative number (argmin), only a negative
// pattern of larger magnitude: the lane as an unsigned integer. NaN patterns lie beyond
// both, so those of one sign pass (their exact keys then lose); under NAN_PROPAGATE every NaN
// must pass, and is looked for apart. Any other best (the walk's start, a zero, NaN) lets
// everything pass. Lanes are compared in a word's top BITS, flipped (QUICK_FLIP) so that
// unsigned order is the order wanted.

const QUICK_FLIP: u32 = select(F_SIGN * LANE_ONES, 0u, MINIMIZE);

// The limit a lane must reach to pass, for bests of keys t (0: everything passes).
fn quick_limit4(t: vec4<u32>) -> vec4<u32> {
    let up = select(t, ~t, MINIMIZE);  // the bests' ascending keys (key_of_bits4)
    let tie = vec4<u32>(select(0u, 1u, INCREASING));  // a tie wins only under DECREASING
    if (!MINIMIZE) {
        let positive = (up > vec4<u32>(F_SIGN)) & (up <= vec4<u32>(F_SIGN | F_INF));
        return select(vec4<u32>(0u), (((up & vec4<u32>(F_ABS)) + tie) ^ vec4<u32>(F_SIGN)) << vec4<u32>(32u - BITS), positive);
    }
    let negative = (up < vec4<u32>(F_SIGN)) & (up >= vec4<u32>(F_SIGN - 1u - F_INF));
    return select(vec4<u32>(0u), ((vec4<u32>(F_SIGN - 1u) - up) + vec4<u32>(F_SIGN) + tie) << vec4<u32>(32u - BITS), negative);
}

fn quick_limit(t: Key) -> u32 {
    return quick_limit4(vec4<u32>(t)).x;
}

// NaN in any lane of a quad, each lane's bits seen in the top BITS of a word.
fn nan_lanes(top: vec4<u32>) -> vec4<bool> {
    return (top & vec4<u32>(F_ABS << (32u - BITS))) > vec4<u32>(F_INF << (32u - BITS));
}

// Whether any element of a quad may beat the best the limit stands for.
fn quick_passes(words: vec4<u32>, limit: u32) -> bool {
    let flipped = words ^ vec4<u32>(QUICK_FLIP);
    var top = flipped;
    if (BITS == 16u) {
        top = max(flipped & vec4<u32>(0xffff0000u), flipped << vec4<u32>(16u));
    }
    var passes = max(max(top.x, top.y), max(top.z, top.w)) >= limit;
    if (NAN_PROPAGATE) {
        passes = passes || any(nan_lanes(words)) || (BITS == 16u && any(nan_lanes(words << vec4<u32>(16u))));
    }
    return passes;
}
