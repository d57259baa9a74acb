// ARGMAX / ARGMIN with the winners' keys (ArgReduction.keyed): a UINT64 output word, the
// index in its low half and the key (inputs of at most 32 bits: one u32) in its high half;
// dmlgpu.dask merges its chunks' results by those keys.

@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn store_winner(out_base: u32, best: Pair) {
    dst[2u * out_base] = reported_index(best.index);
    dst[2u * out_base + 1u] = best.key;
}
