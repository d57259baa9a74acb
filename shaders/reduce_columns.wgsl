// A thread per 16-byte quad of outputs (PER_QUAD outputs, one quad of each reduced row): for
// reductions over outer or middle axes, where outputs are contiguous in memory. Each step
// loads the quad of one row and advances its outputs' pairs together, so a warp reads 512
// contiguous bytes per load. The plan checked that every quad is aligned, so one output's
// offsets give the others'.
// Constants: WG, PER_QUAD (from load_quads.wgsl), COL_INTERLEAVE, COL_UNROLL.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid) * WG + lid;
    let outputs = params.counts.x;
    let groups = outputs / PER_QUAD;
    if (item >= groups * params.split.x) {
        return;
    }
    // A division by a uniform costs tens of instructions: none where there is one chunk.
    let o = select(item % groups, item, ONE_CHUNK) * PER_QUAD;
    let chunk = select(item / groups, 0u, ONE_CHUNK);
    // COL_INTERLEAVE: chunk c takes rows c, c + split, ...; otherwise its run of rows.
    let step = select(1u, params.split.x, COL_INTERLEAVE);
    let start = select(chunk * params.split.y, chunk, COL_INTERLEAVE);
    let end = select(start + min(params.split.y, params.counts.y - start), params.counts.y, COL_INTERLEAVE);
    let offsets = kept_offsets(o);
    let base = offsets.x;

    // Part p of the quad holds element w * PER_WORD + p of word w, which belongs to output
    // o + w * PER_WORD + p; each part's keys and indices advance as whole vectors.
    var best_key: array<vec4<u32>, PER_WORD>;
    var best_index: array<vec4<u32>, PER_WORD>;
    let first = quad((base + reduced_offsets(start).x) / PER_QUAD);
    for (var p = 0u; p < PER_WORD; p++) { // unroll
        best_key[p] = quad_keys(first, p);
        best_index[p] = vec4<u32>(start);
    }
    // COL_UNROLL rows' quads are loaded before any is folded. Past the chunk's end a step
    // loads the output's last reduced row instead: its index is at least every one held, so
    // the walk's indices never fall, and a row folded twice (here, or in the chunk it belongs
    // to when chunks interleave) is the same pair, which no merge can mistake.
    for (var r0 = start + step; r0 < end; r0 += step * COL_UNROLL) {
        var words: array<vec4<u32>, COL_UNROLL>;
        for (var u = 0u; u < COL_UNROLL; u++) { // unroll
            words[u] = quad((base + reduced_offsets(min(r0 + u * step, end - 1u)).x) / PER_QUAD);
        }
        for (var u = 0u; u < COL_UNROLL; u++) { // unroll
            let r = min(r0 + u * step, end - 1u);
            for (var p = 0u; p < PER_WORD; p++) { // unroll
                let k = quad_keys(words[u], p);
                // r is at least every index held, and equal only for the last row
                // reloaded: the simplified tie rule (common.wgsl) then changes nothing.
                let wins = select(k >= best_key[p], k > best_key[p], INCREASING);
                best_key[p] = select(best_key[p], k, wins);
                best_index[p] = select(best_index[p], vec4<u32>(r), wins);
            }
        }
    }
    let out_step = params.kept_out[(KEPT_RANK - 1u) / 4u][(KEPT_RANK - 1u) % 4u];
    for (var i = 0u; i < PER_QUAD; i++) { // unroll
        let p = i % PER_WORD;
        let w = i / PER_WORD;
        store_result(chunk * outputs + o + i, offsets.y + i * out_step, Pair(best_key[p][w], best_index[p][w]));
    }
}
