// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

alias Key = u32;

// Four elements' keys at once (the shaders fold 16-byte quads); key_of_bits is one lane.
fn key_of_bits4(b: vec4<u32>) -> vec4<u32> {
    var k = b ^ vec4<u32>(SIGN_FLIP);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

fn key_of_bits(b: u32) -> Key {
    return key_of_bits4(vec4<u32>(b)).x;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}

// A key as two words (high, low), for partial results, and back.
fn key_to_partial(k: Key) -> vec2<u32> {
    return vec2<u32>(0u, k);
}

fn key_from_partial(w: vec2<u32>) -> Key {
    return w.y;
}
