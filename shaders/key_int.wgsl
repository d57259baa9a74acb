// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

// Four elements' keys at once (the shaders fold 16-byte quads); key_of_bits is one lane.
fn key_of_bits4(b: vec4<u32>) -> vec4<u32> {
    var k = b ^ vec4<u32>(SIGN_FLIP);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}
