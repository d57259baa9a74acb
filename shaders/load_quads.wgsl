// Elements of BITS bits (8, 16 or 32) in rows that the plan found contiguous and aligned
// to 16 bytes: read as quads of words (one 16-byte load, quad() of src_quads*.wgsl), the
// ragged tail one by one.
// Constants: BITS (PER_WORD and BIT_MASK from key_u32.wgsl).
//
// The bound range may end inside a quad: a caller's binding holds the tensor's
// total_tensor_size_in_bytes, a multiple of 4 (docs/binding.md). quad() then reaches only its
// whole quads (quad_count), and an index past them would be clamped to other data, so the
// elements read one by one (the ragged tails here, and the last rows of reduce_rows) are read
// as words, from `src_words` (the src_*.wgsl module declares it).

const PER_QUAD: u32 = 4u * PER_WORD;

fn load_key(e: u32) -> Key {
    return key_of_bits((src_words[e / PER_WORD] >> ((e % PER_WORD) * BITS)) & BIT_MASK);
}

fn quad_bits(words: vec4<u32>, j: u32) -> u32 {
    return (words[j / PER_WORD] >> ((j % PER_WORD) * BITS)) & BIT_MASK;
}

// The keys of part p of a quad: element w * PER_WORD + p of each word w.
fn quad_keys(words: vec4<u32>, p: u32) -> vec4<u32> {
    return key_of_bits4((words >> vec4<u32>(p * BITS)) & vec4<u32>(BIT_MASK));
}

// Merge the PER_QUAD elements of a quad, read as `words`, whose first has reduced index `r`
// (larger than best's index): the quad's largest key first, part by part with
// whole-vector operations, and only a quad that wins looks for which of its elements holds
// it (the first for INCREASING, the last for DECREASING).
fn fold_words(words: vec4<u32>, r: u32, best: ptr<function, Pair>) {
    var top = 0u;  // no key is below 0
    for (var p = 0u; p < PER_WORD; p++) { // unroll
        let k = quad_keys(words, p);
        top = max(top, max(max(k.x, k.y), max(k.z, k.w)));
    }
    if (!later_wins(*best, top)) {
        return;
    }
    for (var i = 0u; i < PER_QUAD; i++) { // unroll
        let j = select(PER_QUAD - 1u - i, i, INCREASING);
        if (key_of_bits(quad_bits(words, j)) == top) {
            *best = Pair(top, r + j);
            return;
        }
    }
}

// The index of the quad holding reduced element `r` (a multiple of PER_QUAD) of the slice
// at `base`. With one reduced dimension the quads of a row are consecutive; with several,
// the innermost is contiguous and a whole number of quads (the plan checked), so a quad
// never straddles two of its rows and one offset is computed per quad.
fn quad_at(base: u32, r: u32) -> u32 {
    if (RED_RANK <= 1u) {
        return (base + r) / PER_QUAD;
    }
    return (base + reduced_offsets(r).x) / PER_QUAD;
}

// Reduced elements [start, end) of the slice at `base` (start a multiple of PER_QUAD):
// quads first + q * step for this thread, then the ragged tail one by one.
fn fold_range(base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    let quads = (end - start) / PER_QUAD;
    for (var q = first; q < quads; q += step) {
        let r = start + q * PER_QUAD;
        fold_words(quad(quad_at(base, r)), r, best);
    }
    fold_strided(base, start + quads * PER_QUAD, end, first, step, best);
}
