// Elements of BITS bits (8, 16 or 32) in rows that the plan found contiguous and aligned
// to 16 bytes: read as quads of words (one 16-byte load), the ragged tail one by one.
// Constants: BITS.

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;

const PER_WORD: u32 = 32u / BITS;
const PER_QUAD: u32 = 4u * PER_WORD;
const BIT_MASK: u32 = 0xffffffffu >> (32u - BITS);

fn load_key(e: u32) -> Key {
    let word = src[e / PER_QUAD][(e / PER_WORD) % 4u];
    return key_of_bits((word >> ((e % PER_WORD) * BITS)) & BIT_MASK);
}

// Merge the PER_QUAD elements of quad `q`, whose first has reduced index `r`.
fn fold_quad(q: u32, r: u32, best: ptr<function, Pair>) {
    let words = src[q];
    for (var j = 0u; j < PER_QUAD; j++) {
        let bits = (words[j / PER_WORD] >> ((j % PER_WORD) * BITS)) & BIT_MASK;
        *best = merge(*best, Pair(key_of_bits(bits), r + j));
    }
}

// Reduced elements [start, end) of the row at `base` (both multiples of PER_QUAD):
// quads first + q * step for this thread, then the tail.
fn fold_range(base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    let quads = (end - start) / PER_QUAD;
    let q0 = (base + start) / PER_QUAD;
    for (var q = first; q < quads; q += step) {
        fold_quad(q0 + q, start + q * PER_QUAD, best);
    }
    fold_strided(base, start + quads * PER_QUAD, end, first, step, best);
}
