// What every 64-bit key shares as two 32-bit words (x = high, y = low), for adapters without
// shader-int64, compared high word first: the words come from key_int64.wgsl or
// key_float64.wgsl (key_words).

alias Key = vec2<u32>;

// The key of an element whose words are w (x = low, y = high).
fn key_of_element(w: vec2<u32>) -> Key {
    return key_words(w);
}

// The smallest key: no element's key is below it.
fn key_min() -> Key {
    return vec2<u32>(0u, 0u);
}

// The key's high word (walk_pairs.wgsl's skip test).
fn key_high(k: Key) -> u32 {
    return k.x;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}

fn key_to_partial(k: Key) -> vec2<u32> {
    return k;
}

fn key_from_partial(w: vec2<u32>) -> Key {
    return w;
}
