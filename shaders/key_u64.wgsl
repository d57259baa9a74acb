// What every 64-bit key shares as a native u64 (adapters with shader-int64): the two words
// of an element's key come from key_int64.wgsl or key_float64.wgsl (key_words).

alias Key = u64;

// The key of an element whose words are w (x = low, y = high).
fn key_of_element(w: vec2<u32>) -> Key {
    let k = key_words(w);
    return (u64(k.x) << 32u) | u64(k.y);
}

// The smallest key: no element's key is below it.
fn key_min() -> Key {
    return u64(0u);
}

// The key's high word (walk_pairs.wgsl's skip test).
fn key_high(k: Key) -> u32 {
    return u32(k >> 32u);
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}

fn key_to_partial(k: Key) -> vec2<u32> {
    return vec2<u32>(u32(k >> 32u), u32(k));
}

fn key_from_partial(w: vec2<u32>) -> Key {
    return (u64(w.x) << 32u) | u64(w.y);
}
