// A thread per work item (an output, or one chunk of it): for reductions whose neighbouring
// outputs sit at neighbouring addresses (outer and middle axes), so a warp's loads coalesce,
// and for many short rows. Constants: WG.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid) * WG + lid;
    if (item >= params.split.z) {
        return;
    }
    let outputs = params.counts.x;
    let o = item % outputs;
    let chunk = item / outputs;
    let start = chunk * params.split.y;
    let end = start + min(params.split.y, params.counts.y - start);
    let base = kept_offsets(o);

    var best = pair_at(base.x, start);
    fold_range(base.x, start, end, 0u, 1u, &best);
    store_result(chunk * outputs + o, base.y, best);
}
