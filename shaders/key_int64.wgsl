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

// The skip test of walk_pairs.wgsl: whether a quad (two elements) may hold an element that
// beats or ties a best whose key's high word is t. The key's high word is the element's
// flipped (QUICK_FLIP64), so an element whose flipped high word is below t cannot.
const QUICK_FLIP64: u32 = SIGN_FLIP ^ select(0u, 0xffffffffu, MINIMIZE);

fn quick_limit64(t: u32) -> u32 {
    return t;
}

fn quick_passes64(words: vec4<u32>, limit: u32) -> bool {
    return max(words.y ^ QUICK_FLIP64, words.w ^ QUICK_FLIP64) >= limit;
}
