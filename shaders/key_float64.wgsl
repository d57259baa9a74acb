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
