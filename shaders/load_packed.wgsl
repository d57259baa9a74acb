// Element `e` of a tensor of BITS-bit elements (8, 16 or 32) packed into 32-bit words.
// Constants: BITS.

const PER_WORD: u32 = 32u / BITS;
const BIT_MASK: u32 = 0xffffffffu >> (32u - BITS);

fn load_bits(e: u32) -> u32 {
    let word = src[e / PER_WORD];
    return (word >> ((e % PER_WORD) * BITS)) & BIT_MASK;
}
