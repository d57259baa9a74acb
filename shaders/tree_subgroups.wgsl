// Merging one pair per thread within segments of `width` neighbouring threads, with
// subgroup shuffles: within each subgroup first (no workgroup memory, no barriers), then, for
// a segment of several subgroups, their winners through workgroup memory, merged by the
// segment's first subgroup (two barriers, where the tree took one a halving: 8 for 256
// threads; benchmarks/LOG.md, 2026-11-28, llm_batch taken apart). A segment of more subgroups
// than a subgroup has threads (lavapipe's 4 lanes) takes the tree (tree.wgsl, beside this
// file). The segment's first thread holds the winner. Shuffling by lane ^ m pairs thread lid
// with lid ^ m, as subgroups hold consecutive invocations on the adapters seen (NVIDIA,
// lavapipe); the tests check every result against the oracle.

fn segment_best(inv: Invocation, mine: Pair, width: u32) -> Pair {
    let groups = width / inv.sg_size;  // subgroups a segment (0: the segment is part of one)
    if (groups > inv.sg_size) {
        return tree_best(inv.lid, mine, width);
    }
    var best = subgroup_best(mine, min(width, inv.sg_size));
    if (groups <= 1u) {
        return best;
    }
    if (inv.lid % inv.sg_size == 0u) {
        wg_pairs[inv.lid / inv.sg_size] = best;
    }
    workgroupBarrier();
    let lane = inv.lid % width;
    if (lane < groups) {  // the segment's first subgroup: a winner a lane
        best = wg_pairs[(inv.lid - lane) / inv.sg_size + lane];
    }
    workgroupBarrier();  // read before the next segment_best writes
    return subgroup_best(best, groups);
}

// The best pair of each run of `width` lanes (a power of two, at most the subgroup's).
fn subgroup_best(mine: Pair, width: u32) -> Pair {
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
