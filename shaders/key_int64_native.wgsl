// Keys of 64-bit integers as native u64 (adapters with shader-int64).
// Constants: SIGN_FLIP (0x80000000 for INT64, 0 for UINT64, applied to the high word), MINIMIZE.

alias Key = u64;

// The key of an element whose words are w (x = low, y = high).
fn key_of_element(w: vec2<u32>) -> Key {
    var k = (u64(w.y ^ SIGN_FLIP) << 32u) | u64(w.x);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

// The smallest key: no element's key is below it.
fn key_min() -> Key {
    return u64(0u);
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}

fn key_to_partial(k: Key) -> vec2<u32> {
    return vec2<u32>(u32(k >> 32u), u32(k));
}

fn key_from_partial(w: vec2<u32>) -> Key {
    return (u64(w.x) << 32u) | u64(w.y);
}
