// ARGMAX / ARGMIN into INT64 or UINT64: the index as two little-endian words.

@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn store_winner(out_base: u32, best: Pair) {
    let index = reported_index(best.index);
    dst[2u * out_base] = index;
    dst[2u * out_base + 1u] = 0u;
}
