// A thread per PER_QUAD neighbouring outputs (one 16-byte quad of each reduced row): for
// reductions over outer or middle axes, where outputs are contiguous in memory. Each step
// loads one quad and advances the PER_QUAD outputs' pairs together, so a warp reads
// 512 contiguous bytes per load. The plan checked that every quad is aligned.
// Constants: WG, PER_QUAD (from load_quads.wgsl).

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid) * WG + lid;
    let outputs = params.counts.x;
    let groups = outputs / PER_QUAD;
    if (item >= groups * params.split.x) {
        return;
    }
    let o = (item % groups) * PER_QUAD;
    let chunk = item / groups;
    let start = chunk * params.split.y;
    let end = start + min(params.split.y, params.counts.y - start);
    let base = kept_offsets(o).x;

    var best: array<Pair, PER_QUAD>;
    let first = src[(base + reduced_offsets(start).x) / PER_QUAD];
    for (var j = 0u; j < PER_QUAD; j++) {
        best[j] = Pair(key_of_bits(quad_bits(first, j)), start);
    }
    for (var r = start + 1u; r < end; r++) {
        let words = src[(base + reduced_offsets(r).x) / PER_QUAD];
        for (var j = 0u; j < PER_QUAD; j++) {
            let k = key_of_bits(quad_bits(words, j));
            if (later_wins(best[j], k)) {
                best[j] = Pair(k, r);
            }
        }
    }
    for (var j = 0u; j < PER_QUAD; j++) {
        store_result(chunk * outputs + o + j, kept_offsets(o + j).y, best[j]);
    }
}
