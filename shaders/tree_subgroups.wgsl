// Merging one pair per thread within segments of `width` neighbouring threads, with
// subgroup shuffles where a segment fits in a subgroup (no workgroup memory, no barriers),
// else with the tree (tree.wgsl, included beside this file). Shuffling by lane ^ m pairs
// thread lid with lid ^ m, as subgroups hold consecutive invocations on the adapters seen
// (NVIDIA, lavapipe); the tests check every result against the oracle.

fn segment_best(inv: Invocation, mine: Pair, width: u32) -> Pair {
    if (width > inv.sg_size) {
        return tree_best(inv.lid, mine, width);
    }
    var best = mine;
    for (var m = width / 2u; m > 0u; m >>= 1u) {
        let key = key_from_partial(subgroupShuffleXor(key_to_partial(best.key), m));
        best = merge(best, Pair(key, subgroupShuffleXor(best.index, m)));
    }
    return best;
}

// Whether every thread of this thread's subgroup works on `item` (so that they may share
// their best key: walk_batched.wgsl).
fn subgroup_on_one_item(item: u32) -> bool {
    return subgroupAll(subgroupBroadcastFirst(item) == item);
}

// The largest key of the subgroup where `pooled`, else this thread's own.
fn threshold_key(key: u32, pooled: bool) -> u32 {
    return select(key, subgroupMax(key), pooled);
}
