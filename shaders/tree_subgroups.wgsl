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
