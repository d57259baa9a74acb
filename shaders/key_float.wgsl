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
