// Elements of BITS bits (8, 16 or 32) packed into 32-bit words, read one word at a time.
// Constants: BITS (PER_WORD and BIT_MASK from key_u32.wgsl).

@group(0) @binding(1) var<storage, read> src: array<u32>;

fn load_key(e: u32) -> Key {
    return key_of_bits((src[e / PER_WORD] >> ((e % PER_WORD) * BITS)) & BIT_MASK);
}

fn fold_range(base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    fold_strided(base, start, end, first, step, best);
}
