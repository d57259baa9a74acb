// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

alias Key = u32;

fn load_key(e: u32) -> Key {
    var k = load_bits(e) ^ SIGN_FLIP;
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}
