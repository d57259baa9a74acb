// Merging within segments through the tree alone (adapters without subgroups).

fn segment_best(inv: Invocation, mine: Pair, width: u32) -> Pair {
    return tree_best(inv.lid, mine, width);
}

// Without subgroups, each thread keeps its own best key (walk_batched.wgsl).
fn subgroup_on_one_item(item: u32) -> bool {
    return false;
}

fn threshold_key(key: u32, pooled: bool) -> u32 {
    return key;
}
