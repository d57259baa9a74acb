// A thread per COLQ neighbouring 16-byte quads of outputs (COLQ * PER_QUAD outputs: one
// quad or two side by side of each reduced row): for reductions over outer or middle axes,
// where outputs are contiguous in memory. Each step loads the COLQ quads of one row and
// advances their outputs' pairs together, so a warp reads 512 contiguous bytes per load.
// COL_SKIP: each part of a quad is first tested against its outputs' bests on raw bits
// (quick_lanes_pass, the key module's), and only a part that may win gets exact keys. The
// plan checked that every quad is aligned and that a thread's quads lie in one row, so one
// output's offsets give the others'.
// Constants: WG, PER_QUAD (from load_quads.wgsl), COLQ, COL_SKIP, COL_INTERLEAVE, COL_UNROLL.

const COL_OUTPUTS: u32 = COLQ * PER_QUAD;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = workgroup_index(wid) * WG + lid;
    let outputs = params.counts.x;
    let groups = outputs / COL_OUTPUTS;
    if (item >= groups * params.split.x) {
        return;
    }
    // A division by a uniform costs tens of instructions: none where there is one chunk.
    let o = select(item % groups, item, ONE_CHUNK) * COL_OUTPUTS;
    let chunk = select(item / groups, 0u, ONE_CHUNK);
    // COL_INTERLEAVE: chunk c takes rows c, c + split, ...; otherwise its run of rows.
    let step = select(1u, params.split.x, COL_INTERLEAVE);
    let start = select(chunk * params.split.y, chunk, COL_INTERLEAVE);
    let end = select(start + min(params.split.y, params.counts.y - start), params.counts.y, COL_INTERLEAVE);
    let offsets = kept_offsets(o);
    let base = offsets.x;

    // Part p of quad j holds element w * PER_WORD + p of word w, which belongs to output
    // o + j * PER_QUAD + w * PER_WORD + p; each part's keys and indices advance as whole vectors.
    var best_key: array<array<vec4<u32>, PER_WORD>, COLQ>;
    var best_index: array<array<vec4<u32>, PER_WORD>, COLQ>;
    var limit: array<array<vec4<u32>, PER_WORD>, COLQ>;
    let first = (base + reduced_offsets(start).x) / PER_QUAD;
    for (var j = 0u; j < COLQ; j++) { // unroll
        let words = quad(first + j);
        for (var p = 0u; p < PER_WORD; p++) { // unroll
            best_key[j][p] = quad_keys(words, p);
            best_index[j][p] = vec4<u32>(start);
            limit[j][p] = quick_limit4(best_key[j][p]);
        }
    }
    // COL_UNROLL rows' quads are loaded before any is folded. Past the chunk's end a step
    // loads the output's last reduced row instead: its index is at least every one held, so
    // the walk's indices never fall, and a row folded twice (here, or in the chunk it belongs
    // to when chunks interleave) is the same pair, which no merge can mistake.
    for (var r0 = start + step; r0 < end; r0 += step * COL_UNROLL) {
        var words: array<array<vec4<u32>, COLQ>, COL_UNROLL>;
        for (var u = 0u; u < COL_UNROLL; u++) { // unroll
            let q = (base + reduced_offsets(min(r0 + u * step, end - 1u)).x) / PER_QUAD;
            for (var j = 0u; j < COLQ; j++) { // unroll
                words[u][j] = quad(q + j);
            }
        }
        for (var u = 0u; u < COL_UNROLL; u++) { // unroll
            let r = min(r0 + u * step, end - 1u);
            for (var j = 0u; j < COLQ; j++) { // unroll
                for (var p = 0u; p < PER_WORD; p++) { // unroll
                    if (!COL_SKIP || quick_lanes_pass(words[u][j], p, limit[j][p])) {
                        let k = quad_keys(words[u][j], p);
                        // r is at least every index held, and equal only for the last row
                        // reloaded: the simplified tie rule (common.wgsl) then changes nothing.
                        let wins = select(k >= best_key[j][p], k > best_key[j][p], INCREASING);
                        best_key[j][p] = select(best_key[j][p], k, wins);
                        best_index[j][p] = select(best_index[j][p], vec4<u32>(r), wins);
                        if (COL_SKIP) {
                            limit[j][p] = quick_limit4(best_key[j][p]);
                        }
                    }
                }
            }
        }
    }
    let out_step = params.kept_out[(KEPT_RANK - 1u) / 4u][(KEPT_RANK - 1u) % 4u];
    for (var i = 0u; i < COL_OUTPUTS; i++) { // unroll
        let j = i / PER_QUAD;
        let p = i % PER_WORD;
        let w = (i % PER_QUAD) / PER_WORD;
        store_result(chunk * outputs + o + i, offsets.y + i * out_step, Pair(best_key[j][p][w], best_index[j][p][w]));
    }
}
