// Order-preserving keys of IEEE floats (FLOAT32 or FLOAT16), as u32.
// Comparisons on float values could ignore NaN, the sign of zero or subnormals
// (WGSL allows it), so the shader compares these integer keys only.
// Constants: F_SIGN, F_ABS, F_INF (the format's sign bit, magnitude mask, +inf),
// MINIMIZE, NAN_PROPAGATE.

// NaN is below every number (ignore) or above every number (propagate). No number
// maps to 0 or 0xffffffff: those keys belong to NaN bit patterns.
const NAN_KEY: u32 = select(0u, 0xffffffffu, NAN_PROPAGATE);

// Cheap keys for a quick test (load_quads.wgsl), every BITS-wide lane of a word at once:
// the classic sortable form (the sign bit flipped for positives, every bit for negatives).
// Within a lane they equal the exact keys' low bits except for -0.0 (one below +0.0's,
// with which the exact key ties it; under MINIMIZE one above) and NaN (anywhere).
fn lane_keys(w: vec4<u32>) -> vec4<u32> {
    var negative: vec4<u32>;
    if (BITS == 32u) {
        negative = bitcast<vec4<u32>>(bitcast<vec4<i32>>(w) >> vec4<u32>(31u));
    } else {
        negative = ((w >> vec4<u32>(BITS - 1u)) & vec4<u32>(LANE_ONES)) * vec4<u32>(BIT_MASK);
    }
    let k = w ^ (negative | vec4<u32>(F_SIGN * LANE_ONES));
    return select(k, ~k, MINIMIZE);
}

// Where a lane key that beats the threshold may belong to an element that beats exact key
// `k`, and one that does not cannot. Only -0.0 needs care: under DECREASING it ties with a
// best of +-0.0 and so wins, though its lane key is one below. NaN under IGNORE has key 0,
// which beats nothing but a best of key 0 (then every quad is tested exactly). Under
// PROPAGATE, NaN's key is the largest, which lane keys do not mirror: no quick test.
const QUICK: bool = QUICK_TEST && !NAN_PROPAGATE;

fn quick_threshold(k: Key) -> Key {
    return select(k, k - 1u, !INCREASING && !MINIMIZE && k == F_SIGN);
}

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
