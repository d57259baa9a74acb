// HARDMAX into FLOAT64: as store_one_f32, the 1.0 being two words of which the runner's clear
// left the low one at zero already: only the high word is written.

@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn store_winner(out_base: u32, best: Pair) {
    let index = reported_index(best.index);
    let e = out_base + reduced_offsets(index).y;
    if (e < params.split.w) {  // else another window's (a merge run per window)
        dst[2u * e + 1u] = 0x3ff00000u;
    }
}
