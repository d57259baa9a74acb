// 64-bit elements, each read as one 8-byte pair of words (x = low, y = high).

@group(0) @binding(1) var<storage, read> src: array<vec2<u32>>;

fn load_key(e: u32) -> Key {
    return key_of_element(src[e]);
}

fn fold_range(base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    fold_strided(base, start, end, first, step, best);
}
