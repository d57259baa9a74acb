// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

// Four elements' keys at once (the shaders fold 16-byte quads); key_of_bits is one lane.
fn key_of_bits4(b: vec4<u32>) -> vec4<u32> {
    if (NO_KEYS) {  // a timing experiment (Tuning.bound_no_keys): no key work, wrong answers
        return b;
    }
    var k = b ^ vec4<u32>(SIGN_FLIP);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}

// The skip test of the batched walk (walk_batched.wgsl): whether a quad may hold an element
// that beats a best of key t. A lane's key is its bits flipped (QUICK_FLIP), so lanes are
// compared with t's low bits directly: 32-bit lanes by their largest, 8- and 16-bit lanes two
// at a time, every other one in a slot twice as wide, where adding a constant carries into
// the slot's bit BITS exactly where a lane beats t.

const QUICK_FLIP: u32 = select(0u, 0xffffffffu, MINIMIZE) ^ (SIGN_FLIP * LANE_ONES);
const PAIR_ONES: u32 = select(0x00010001u, 1u, BITS == 16u);  // a 1 in each slot
const SLOT_SHIFT: u32 = BITS % 32u;  // BITS, kept valid where BITS is 32 (no slots then)
const CARRY: u32 = PAIR_ONES << SLOT_SHIFT;
// The bits above a lane that every real key holds (MINIMIZE inverts all 32); the walk's
// start key, 0, lies below them.
const KEY_HIGH: u32 = select(0u, ~BIT_MASK, MINIMIZE);

// The walk's limit (32-bit lanes: the smallest key that passes, wrapping to 0, everything,
// past the largest; narrower lanes: the constant added to each slot).
fn quick_limit(t: Key) -> u32 {
    let tie = select(0u, 1u, INCREASING);  // a tie with the best wins only under DECREASING
    if (BITS == 32u) {
        return t + tie;
    }
    if (t < KEY_HIGH) {
        return (BIT_MASK + 1u) * PAIR_ONES;
    }
    return (BIT_MASK + 1u - tie - (t & BIT_MASK)) * PAIR_ONES;
}

fn quick_passes(words: vec4<u32>, limit: u32) -> bool {
    let keys = words ^ vec4<u32>(QUICK_FLIP);
    // A narrower lane's limit is 0 only once the best is the largest key and ties lose
    // (INCREASING): nothing passes then, and the test's slot arithmetic (a few operations
    // a word, more than a 32-bit lane's) need not run. INT8 data holds its largest value
    // within a few hundred elements (256 values).
    if (BITS < 32u && limit == 0u) {
        return false;
    }
    if (BITS == 32u) {
        return max(max(keys.x, keys.y), max(keys.z, keys.w)) >= limit;
    }
    let slots = vec4<u32>(BIT_MASK * PAIR_ONES);
    let even = (keys & slots) + vec4<u32>(limit);
    let odd = ((keys >> vec4<u32>(SLOT_SHIFT)) & slots) + vec4<u32>(limit);
    return any(((even | odd) & vec4<u32>(CARRY)) != vec4<u32>(0u));
}
