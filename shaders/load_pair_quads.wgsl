// 64-bit elements in rows that the plan found contiguous and aligned to 16 bytes: read two at
// a time, as one 16-byte quad (x, y: the first element's low and high words; z, w: the
// second's), by the segments kernel's walk_pairs.wgsl (through quad() of src_quads.wgsl); the
// ragged tail one by one, as words (src_words): a binding may end inside a quad, whose half
// quad() cannot reach (load_quads.wgsl says why).

const PER_QUAD: u32 = 2u;

fn load_key(e: u32) -> Key {
    return key_of_element(vec2<u32>(src_words[2u * e], src_words[2u * e + 1u]));
}

// Merge the two elements of a quad, read as `words`, whose first has reduced index `r`
// (larger than best's): the better of the two by the tie rule, then that one against the best.
fn fold_words(words: vec4<u32>, r: u32, best: ptr<function, Pair>) {
    let first = key_of_element(words.xy);
    let second = key_of_element(words.zw);
    let take_second = later_wins(Pair(first, r), second);
    let k = select(first, second, take_second);
    if (later_wins(*best, k)) {
        *best = Pair(k, r + select(0u, 1u, take_second));
    }
}

// The index of the quad holding reduced element `r` (a multiple of PER_QUAD) of the slice
// at `base`; with several reduced dimensions the innermost is a whole number of quads (the
// plan checked), so a quad never straddles two of its rows.
fn quad_at(base: u32, r: u32) -> u32 {
    if (RED_RANK <= 1u) {
        return (base + r) / PER_QUAD;
    }
    return (base + reduced_offsets(r).x) / PER_QUAD;
}
