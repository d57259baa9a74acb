// SEG threads per work item (an output, or one chunk of an output's reduction when the plan
// splits it). SEG = WG gives each long row a workgroup; a small SEG packs WG / SEG short
// rows into a workgroup, so that a warp's loads cover neighbouring rows rather than one
// element of 32 rows. The threads fold the chunk with stride SEG, a tree over each segment
// (tree.wgsl) merges their pairs, and the segment's first thread stores the winner. How a
// thread walks its part of the chunk: walk_strided.wgsl or walk_batched.wgsl.
// Constants: WG, SEG.

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>) {
    let lid = inv.lid;
    let lane = lid % SEG;
    let wanted = workgroup_index(wid) * (WG / SEG) + lid / SEG;
    // Segments past the last item redo it and store nothing: every thread must reach the
    // tree's barriers.
    let item = min(wanted, params.split.z - 1u);
    let work = work_of(item);

    var best = walk_start(work.start);
    fold_segment(subgroup_on_one_item(item), work.base.x, work.start, work.end, lane, SEG, &best);

    var winner = best;
    if (SEG > 1u) {  // a thread a row needs no tree, nor its barriers
        winner = segment_best(inv, best, SEG);
    }
    if (lane == 0u && wanted < params.split.z) {
        store_result(item, work.base.y, winner);
    }
}
