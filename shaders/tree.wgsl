// Merging one pair per thread across a workgroup: a tree in workgroup memory, the tie
// rule applied at every step. Every thread must call it (it has barriers). Constants: WG.

var<workgroup> wg_pairs: array<Pair, WG>;

fn workgroup_best(lid: u32, mine: Pair) -> Pair {
    wg_pairs[lid] = mine;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            wg_pairs[lid] = merge(wg_pairs[lid], wg_pairs[lid + s]);
        }
        workgroupBarrier();
    }
    return wg_pairs[0];
}
