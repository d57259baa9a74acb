// A thread per work item (an output, or one chunk of it): for reductions whose elements are
// neither contiguous rows (reduce_segments) nor aligned columns (reduce_columns), e.g. a
// broadcast or strided reduced axis under a kept axis that is not a whole quad. The planner
// puts the smallest kept stride innermost, so neighbouring threads read nearby addresses.
// Constants: WG.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid) * WG + lid;
    if (item >= params.split.z) {
        return;
    }
    let work = work_of(item);
    var best = walk_start(work.start);
    fold_range(work.base.x, work.start, work.end, 0u, 1u, &best);
    store_result(item, work.base.y, best);
}
