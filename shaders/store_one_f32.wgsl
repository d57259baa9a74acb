// HARDMAX into FLOAT32: the runner zeroes the output, then each slice writes 1.0 at its
// winner, found through the reduced dimensions' output strides.

@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn store_winner(out_base: u32, best: Pair) {
    let index = reported_index(best.index);
    let e = out_base + reduced_offsets(index).y;
    if (e < params.split.w) {  // else another window's (a merge run per window)
        dst[e] = 0x3f800000u;
    }
}
