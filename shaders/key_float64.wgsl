// Keys of IEEE doubles (FLOAT64), as two words (high, low) for key_u64.wgsl or
// key_u64_words.wgsl: the bits with the sign folded in, as key_float.wgsl makes 32-bit keys,
// so that no float is ever compared (WGSL may ignore NaN, the sign of zero or subnormals).
// Constants: MINIMIZE, NAN_PROPAGATE.

// NaN is below every number (ignore) or above every number (propagate). No number maps to
// the words (0, 0) or (0xffffffff, 0xffffffff): those keys belong to NaN bit patterns.
const NAN_WORD: u32 = select(0u, 0xffffffffu, NAN_PROPAGATE);

// The key's words (x = high, y = low) of an element whose words are w (x = low, y = high).
fn key_words(w: vec2<u32>) -> vec2<u32> {
    // Negative numbers (patterns above the sign bit alone) reverse their order; -0.0 is the
    // sign bit alone and takes +0.0's key (they tie).
    let negative = w.y > 0x80000000u || (w.y == 0x80000000u && w.x != 0u);
    var k = select(vec2<u32>(w.y | 0x80000000u, w.x), ~vec2<u32>(w.y, w.x), negative);
    if (MINIMIZE) {
        k = ~k;
    }
    // NaN: every exponent bit set and a mantissa that is not zero.
    let high = w.y & 0x7fffffffu;
    let nan = high > 0x7ff00000u || (high == 0x7ff00000u && w.x != 0u);
    return select(k, vec2<u32>(NAN_WORD), nan);
}

// The skip test of walk_pairs.wgsl: whether a quad (two elements) may hold an element that
// beats or ties a best whose key's high word is t, from the elements' high words alone. Once
// the best is a number of the wanted sign (positive for argmax, negative for argmin) whose
// high word is not the sign's alone, only an element of that sign whose raw high word is at
// least the best's beats or ties it: as signed integers (argmax) or unsigned ones (argmin),
// which is t itself against the elements' high words flipped by QUICK_FLIP64. Any other best
// (the walk's start, a zero, a subnormal, ignored NaN) lets everything pass. Under
// NAN_PROPAGATE every NaN must pass (a NaN of the other sign, or a later one under
// DECREASING, where the best is NaN), and is looked for apart, infinities passing with it.
const QUICK_FLIP64: u32 = select(0x80000000u, 0u, MINIMIZE);

fn quick_limit64(t: u32) -> u32 {
    return select(0u, t, t > 0x80000000u);
}

fn quick_passes64(words: vec4<u32>, limit: u32) -> bool {
    var passes = max(words.y ^ QUICK_FLIP64, words.w ^ QUICK_FLIP64) >= limit;
    if (NAN_PROPAGATE) {
        passes = passes || max(words.y & 0x7fffffffu, words.w & 0x7fffffffu) >= 0x7ff00000u;
    }
    return passes;
}
