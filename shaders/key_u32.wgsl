// What every 32-bit key shares (key_float.wgsl and key_int.wgsl make them): plain
// unsigned order, and the two-word form of partial results.

alias Key = u32;

// Elements of BITS bits (8, 16 or 32) share 32-bit words: PER_WORD lanes of BIT_MASK each.
const PER_WORD: u32 = 32u / BITS;
const BIT_MASK: u32 = 0xffffffffu >> (32u - BITS);
const LANE_ONES: u32 = 0xffffffffu / BIT_MASK;  // a 1 in each lane

fn key_of_bits(b: u32) -> Key {
    return key_of_bits4(vec4<u32>(b)).x;
}

// The smallest key: no element's key is below it.
fn key_min() -> Key {
    return 0u;
}

fn key_gt(a: Key, b: Key) -> bool {
    return a > b;
}

// A key as two words (high, low), for partial results, and back.
fn key_to_partial(k: Key) -> vec2<u32> {
    return vec2<u32>(0u, k);
}

fn key_from_partial(w: vec2<u32>) -> Key {
    return w.y;
}
