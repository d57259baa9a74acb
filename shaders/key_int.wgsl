// Keys of 8-, 16- and 32-bit integers, as u32: flipping the sign bit orders signed values.
// Constants: SIGN_FLIP (the type's sign bit, 0 for unsigned), MINIMIZE.

// Cheap keys for a quick test (load_quads.wgsl), every BITS-wide lane of a word at once:
// here the exact keys' low bits themselves.
fn lane_keys(w: vec4<u32>) -> vec4<u32> {
    let k = w ^ vec4<u32>(SIGN_FLIP * LANE_ONES);
    return select(k, ~k, MINIMIZE);
}

const QUICK: bool = QUICK_TEST;

fn quick_threshold(k: Key) -> Key {
    return k;
}

// Four elements' keys at once (the shaders fold 16-byte quads); key_of_bits is one lane.
fn key_of_bits4(b: vec4<u32>) -> vec4<u32> {
    var k = b ^ vec4<u32>(SIGN_FLIP);
    if (MINIMIZE) {
        k = ~k;
    }
    return k;
}
