// Keys of 64-bit integers as native u64 (adapters with shader-int64).
// Constants: SIGN_FLIP (0x80000000 for INT64, 0 for UINT64, applied to the high word), MINIMIZE.

alias Key = u64;

fn load_key(e: u32) -> Key {
    let lo = src[2u * e];
    let hi = src[2u * e + 1u] ^ SIGN_FLIP;
    var k = (u64(hi) << 32u) | u64(lo);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}
