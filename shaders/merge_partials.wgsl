// The second pass of a split reduction with few chunks: a thread per output merges its
// chunks' pairs and stores the winner. Constants: WG.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let o = workgroup_index(wid) * WG + lid;
    let outputs = params.counts.x;
    if (o >= outputs) {
        return;
    }
    var best = partial(o);
    for (var chunk = 1u; chunk < params.split.x; chunk++) {
        best = merge(best, partial(chunk * outputs + o));
    }
    store_winner(kept_offsets(o).y, best);
}
