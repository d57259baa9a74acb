// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

alias Key = u32;

fn key_of_bits(b: u32) -> Key {
    var k = b ^ SIGN_FLIP;
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
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
