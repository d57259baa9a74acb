// A workgroup per work item (an output, or one chunk of an output's reduction when the plan
// splits it): the threads fold the chunk with stride WG, then a tree in workgroup memory
// (tree.wgsl) merges their pairs and thread 0 stores the winner.
// Constants: WG.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid);
    if (item >= params.split.z) {
        return;
    }
    let outputs = params.counts.x;
    let o = item % outputs;
    let chunk = item / outputs;
    let start = chunk * params.split.y;
    let end = start + min(params.split.y, params.counts.y - start);
    let base = kept_offsets(o);

    // Every thread starts from the chunk's first element: a repeated pair never changes a merge.
    var best = pair_at(base.x, start);
    fold_range(base.x, start, end, lid, WG, &best);

    let winner = workgroup_best(lid, best);
    if (lid == 0u) {
        store_result(chunk * outputs + o, base.y, winner);
    }
}
