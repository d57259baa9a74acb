// The second pass of a split reduction with many chunks: a workgroup per output, its
// threads merging the chunks' pairs with stride WG, then a tree (tree.wgsl). Constants: WG.

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>) {
    let lid = inv.lid;
    let o = workgroup_index(wid);
    let outputs = params.counts.x;
    if (o >= outputs) {
        return;
    }
    var best = partial(o);
    for (var chunk = lid; chunk < params.split.x; chunk += WG) {
        best = merge(best, partial(chunk * outputs + o));
    }
    let winner = segment_best(inv, best, WG);
    if (lid == 0u) {
        store_winner(kept_offsets(o).y, winner);
    }
}
