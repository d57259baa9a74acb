// SEG threads per work item (an output, or one chunk of an output's reduction when the plan
// splits it). SEG = WG gives each long row a workgroup; a small SEG packs WG / SEG short
// rows into a workgroup, so that a warp's loads cover neighbouring rows rather than one
// element of 32 rows. The threads fold the chunk with stride SEG, a tree over each segment
// (tree.wgsl) merges their pairs, and the segment's first thread stores the winner. How a
// thread walks its part of the chunk: walk_strided.wgsl or walk_batched.wgsl.
// Constants: WG, SEG.

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(num_workgroups) grid: vec3<u32>) {
    let lid = inv.lid;
    let lane = lid % SEG;
    let items = params.split.z;
    let tiles = (items + WG / SEG - 1u) / (WG / SEG);
    // Workgroups stride over tiles of WG / SEG work items (the plan's grid may be smaller than
    // the tiles: Tuning.segments_groups). The trip count is the workgroup's, so that every
    // thread reaches the tree's barriers.
    for (var tile = workgroup_index(inv.wid); tile < tiles; tile += grid.x * grid.y * grid.z) {
        let wanted = tile * (WG / SEG) + lid / SEG;
        // Segments past the last item redo it and store nothing.
        let item = min(wanted, items - 1u);
        let work = work_of(item);

        var best = walk_start(work.start);
        fold_segment(subgroup_on_one_item(item), work.base.x, work.start, work.end, lane, SEG, &best);

        var winner = best;
        if (SEG > 1u) {  // a thread a row needs no tree, nor its barriers
            winner = segment_best(inv, best, SEG);
        }
        if (lane == 0u && wanted < items) {
            store_result(item, work.base.y, winner);
        }
        if (SEG > 1u) {  // the tree's pairs read before the next tile writes them
            workgroupBarrier();
        }
    }
}
