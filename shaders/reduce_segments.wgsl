// SEG threads per work item (an output, or one chunk of an output's reduction when the plan
// splits it). SEG = WG gives each long row a workgroup; a small SEG packs WG / SEG short
// rows into a workgroup, so that a warp's loads cover neighbouring rows rather than one
// element of 32 rows. The threads fold the chunk with stride SEG, a tree over each segment
// (tree.wgsl) merges their pairs, and the segment's first thread stores the winner. How a
// thread walks its part of the chunk: walk_strided.wgsl or walk_batched.wgsl.
// INTERLEAVE: chunk c of a split in S takes the segment's spans c, c + S, c + 2S, ... of the
// output's whole range (a grid-stride walk, the read ceiling's pattern) rather than its own run;
// its walk starts from the output's first index, which wins only where every element holds the
// smallest key, and then index 0 is the answer anyway (walk_start, fold.wgsl).
// Constants: WG, SEG, INTERLEAVE.

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>) {
    let lid = inv.lid;
    let lane = lid % SEG;
    let wanted = workgroup_index(wid) * (WG / SEG) + lid / SEG;
    // Segments past the last item redo it and store nothing: every thread must reach the
    // tree's barriers.
    let item = min(wanted, params.split.z - 1u);
    let work = work_of(item);

    let chunk = select(item / params.counts.x, 0u, ONE_CHUNK);  // items are numbered chunk-major
    let start = select(work.start, 0u, INTERLEAVE);
    let end = select(work.end, params.counts.y, INTERLEAVE);
    let first = select(lane, chunk * SEG + lane, INTERLEAVE);
    let step = select(SEG, SEG * params.split.x, INTERLEAVE);
    var best = walk_start(start);
    fold_segment(subgroup_on_one_item(item), work.base.x, start, end, first, step, &best);

    var winner = best;
    if (SEG > 1u) {  // a thread a row needs no tree, nor its barriers
        winner = segment_best(inv, best, SEG);
    }
    if (lane == 0u && wanted < params.split.z) {
        store_result(item, work.base.y, winner);
    }
}
