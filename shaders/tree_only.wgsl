// Merging within segments through the tree alone (adapters without subgroups).

fn segment_best(inv: Invocation, mine: Pair, width: u32) -> Pair {
    return tree_best(inv.lid, mine, width);
}
