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

    // Part p of a quad holds element w * PER_WORD + p of word w, which belongs to output
    // o + w * PER_WORD + p; each part's keys and indices advance as whole vectors.
    var best_key: array<vec4<u32>, PER_WORD>;
    var best_index: array<vec4<u32>, PER_WORD>;
    let first = src[(base + reduced_offsets(start).x) / PER_QUAD];
    for (var p = 0u; p < PER_WORD; p++) {
        best_key[p] = quad_keys(first, p);
        best_index[p] = vec4<u32>(start);
    }
    for (var r = start + 1u; r < end; r++) {
        let words = src[(base + reduced_offsets(r).x) / PER_QUAD];
        for (var p = 0u; p < PER_WORD; p++) {
            let k = quad_keys(words, p);
            // r is larger than every index held: the simplified tie rule (common.wgsl).
            let wins = select(k >= best_key[p], k > best_key[p], INCREASING);
            best_key[p] = select(best_key[p], k, wins);
            best_index[p] = select(best_index[p], vec4<u32>(r), wins);
        }
    }
    for (var j = 0u; j < PER_QUAD; j++) {
        let p = j % PER_WORD;
        let w = j / PER_WORD;
        store_result(chunk * outputs + o + j, kept_offsets(o + j).y, Pair(best_key[p][w], best_index[p][w]));
    }
}
