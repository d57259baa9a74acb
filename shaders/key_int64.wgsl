// Keys of 64-bit integers, as two words (high, low) for key_u64.wgsl or key_u64_words.wgsl:
// flipping the high word's sign bit orders signed values.
// Constants: SIGN_FLIP (0x80000000 for INT64, 0 for UINT64), MINIMIZE.

// The key's words (x = high, y = low) of an element whose words are w (x = low, y = high).
fn key_words(w: vec2<u32>) -> vec2<u32> {
    var k = vec2<u32>(w.y ^ SIGN_FLIP, w.x);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}
