// HARDMAX into FLOAT16: as store_one_f32, but two halves share a word, and the other half
// may belong to another slice (another workgroup), so the 1.0 is OR-ed in atomically.

@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;

fn store_winner(out_base: u32, best: Pair) {
    let index = reported_index(best.index);
    let e = out_base + reduced_offsets(index).y;
    if (e < params.split.w) {  // else another window's (a merge run per window)
        atomicOr(&dst[e / 2u], 0x3c00u << ((e % 2u) * 16u));
    }
}
