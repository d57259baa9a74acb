// The first pass of a split reduction: each work item's best pair, as (key high, key low,
// index, 0) at its slot (chunk * outputs + output), for a merge_partials kernel to finish.

@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

fn store_result(slot: u32, out_base: u32, best: Pair) {
    dst[params.piece.w + slot] = vec4<u32>(key_to_partial(best.key), reported_index(best.index), 0u);
}
