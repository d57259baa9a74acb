// ARGMAX / ARGMIN into INT32 or UINT32: the index at the output element.

@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn store_winner(out_base: u32, best: Pair) {
    let index = reported_index(best.index);
    dst[out_base] = index;
}
