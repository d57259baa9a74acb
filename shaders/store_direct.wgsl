// A first pass that needs no merge stores each work item's winner where it belongs.

fn store_result(slot: u32, out_base: u32, best: Pair) {
    store_winner(out_base, best);
}
