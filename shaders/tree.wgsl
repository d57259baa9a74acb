// Merging one pair per thread within segments of `width` neighbouring threads (a power of
// two dividing WG): a tree in workgroup memory, the tie rule applied at every step. Every
// thread of the workgroup must call it with the same width (it has barriers).

var<workgroup> wg_pairs: array<Pair, WG>;

fn tree_best(lid: u32, mine: Pair, width: u32) -> Pair {
    wg_pairs[lid] = mine;
    workgroupBarrier();
    let lane = lid % width;
    for (var s = width / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            wg_pairs[lid] = merge(wg_pairs[lid], wg_pairs[lid + s]);
        }
        workgroupBarrier();
    }
    return wg_pairs[lid - lane];
}
