// Keys of 64-bit integers as two 32-bit words (x = high, y = low), for adapters
// without shader-int64. Compared high word first.
// Constants: SIGN_FLIP (0x80000000 for INT64, 0 for UINT64), MINIMIZE.

alias Key = vec2<u32>;

fn load_key(e: u32) -> Key {
    var k = vec2<u32>(src[2u * e + 1u] ^ SIGN_FLIP, src[2u * e]);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}
