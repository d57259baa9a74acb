// One dispatch for a split reduction (Plan.race): each work item's best pair goes into its
// output's 64-bit word with atomicMax, then it counts itself in; the work item that brings
// the count to the split stores the winner (store_winner) and leaves both at zero for the
// next dispatch. The key is the word's high half; the low half orders ties as the rule wants
// (~index under INCREASING, index under DECREASING), so the largest word holds the winner.
// WGSL's atomics are relaxed and it has no device-scope fence, so no plain store is trusted
// to be seen: the winner travels in the atomic word itself, and the count's increment takes
// an operand from the value the atomicMax returned (params.piece.w, 0 in a plan that races,
// unknown to the compiler), so it is issued only once the max is done.

struct Race {
    best: atomic<u64>,
    count: atomic<u32>,
}

@group(0) @binding(3) var<storage, read_write> race: array<Race>;

fn store_result(slot: u32, out_base: u32, best: Pair) {
    let o = slot % params.counts.x;
    let order = select(best.index, ~best.index, INCREASING);
    let before = atomicMax(&race[o].best, (u64(best.key) << 32u) | u64(order));
    let arrived = atomicAdd(&race[o].count, 1u + (u32(before) & params.piece.w));
    if (arrived + 1u == params.split.x) {
        let won = atomicMin(&race[o].best, u64(0u));  // the final word, and 0 for the next dispatch
        atomicStore(&race[o].count, 0u);
        let low = u32(won);
        store_winner(out_base, Pair(u32(won >> 32u), select(low, ~low, INCREASING)));
    }
}
