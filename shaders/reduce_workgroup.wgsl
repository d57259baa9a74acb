// One workgroup per output element: each thread walks the reduced elements with stride
// WG keeping its best (key, index) pair, then a tree in workgroup memory merges the
// pairs, the tie rule applied at every step, and thread 0 stores the winner.

var<workgroup> wg_key: array<Key, WG>;
var<workgroup> wg_index: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let o = output_index(wid);
    if (o >= params.counts.x) {
        return;
    }
    let n = params.counts.y;
    let base = kept_offsets(o);

    // Threads past the end start from element 0 too: a repeated pair never changes a merge.
    var r = select(0u, lid, lid < n);
    var best_index = r;
    var best_key = load_key(base.x + reduced_offsets(r).x);
    // Written so that r never wraps past 2^32 - 1.
    while (n - r > WG) {
        r += WG;
        let k = load_key(base.x + reduced_offsets(r).x);
        if (better(k, r, best_key, best_index)) {
            best_key = k;
            best_index = r;
        }
    }

    wg_key[lid] = best_key;
    wg_index[lid] = best_index;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            let k = wg_key[lid + s];
            let i = wg_index[lid + s];
            if (better(k, i, wg_key[lid], wg_index[lid])) {
                wg_key[lid] = k;
                wg_index[lid] = i;
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        store_result(base.y, wg_index[0]);
    }
}
