// A work item per 16-byte quad of outputs (PER_QUAD outputs, one quad of each reduced row)
// and chunk of rows: for reductions over outer or middle axes, where outputs are contiguous
// in memory. Each step loads the quad of one row and advances its outputs' pairs together, so
// a warp reads 512 contiguous bytes per load. The plan checked that every quad is aligned, so
// one output's offsets give the others'.
// SEG threads (lanes) share a work item, each taking every SEG-th of its chunk's rows; their
// pairs meet in workgroup memory and lane 0 stores the item's, so SEG times fewer pairs reach
// the outputs' words (a race: store_race.wgsl) for as many threads loading. Lane l of the WG /
// SEG items of a workgroup is thread l * (WG / SEG) + item, so a warp's lanes hold
// neighbouring quads.
// Constants: WG, SEG, PER_QUAD (from load_quads.wgsl), INTERLEAVE, COL_UNROLL.

const ITEMS: u32 = WG / SEG;  // work items a workgroup
const OTHER_LANES: u32 = SEG - 1u;
// Lanes 1 .. SEG - 1's pairs of one part, for lane 0 to merge (one entry where SEG is 1).
var<workgroup> lane_keys: array<vec4<u32>, max(ITEMS * OTHER_LANES, 1u)>;
var<workgroup> lane_indices: array<vec4<u32>, max(ITEMS * OTHER_LANES, 1u)>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let outputs = params.counts.x;
    let groups = outputs / PER_QUAD;
    let items = groups * params.split.x;
    let at = lid % ITEMS;
    let lane = lid / ITEMS;
    // A thread past the last work item walks the last one again, and stores nothing: every
    // thread reaches the workgroup's barriers.
    let item = workgroup_index(wid) * ITEMS + at;
    let mine = min(item, items - 1u);
    // A division by a uniform costs tens of instructions: none where there is one chunk.
    let o = select(mine % groups, mine, ONE_CHUNK) * PER_QUAD;
    let chunk = select(mine / groups, 0u, ONE_CHUNK);
    // INTERLEAVE: chunk c takes rows c, c + split, ...; otherwise its run of rows. A lane
    // takes every SEG-th of those, from the lane-th.
    let chunk_step = select(1u, params.split.x, INTERLEAVE);
    let chunk_start = select(chunk * params.split.y, chunk, INTERLEAVE);
    let end = select(chunk_start + min(params.split.y, params.counts.y - chunk_start), params.counts.y, INTERLEAVE);
    let step = chunk_step * SEG;
    // A lane whose first row lies past the chunk's end starts (and stays) at its last row.
    let start = min(chunk_start + lane * chunk_step, end - 1u);
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
    // the walk's indices never fall, and a row folded twice (here, in another lane, or in the
    // chunk it belongs to when chunks interleave) is the same pair, which no merge can mistake.
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
    // The lanes' pairs, part by part, merged into lane 0's with the whole tie rule (their
    // indices interleave: common.wgsl's merge, output by output).
    if (SEG > 1u) {
        for (var p = 0u; p < PER_WORD; p++) { // unroll
            if (lane > 0u) {
                lane_keys[lid - ITEMS] = best_key[p];
                lane_indices[lid - ITEMS] = best_index[p];
            }
            workgroupBarrier();
            if (lane == 0u) {
                for (var l = 0u; l < OTHER_LANES; l++) { // unroll
                    let keys = lane_keys[l * ITEMS + at];
                    let indices = lane_indices[l * ITEMS + at];
                    for (var w = 0u; w < 4u; w++) {
                        let won = merge(Pair(best_key[p][w], best_index[p][w]), Pair(keys[w], indices[w]));
                        best_key[p][w] = won.key;
                        best_index[p][w] = won.index;
                    }
                }
            }
            workgroupBarrier();
        }
    }
    if (lane > 0u || item >= items) {
        return;
    }
    let out_step = params.kept_out[(KEPT_RANK - 1u) / 4u][(KEPT_RANK - 1u) % 4u];
    for (var i = 0u; i < PER_QUAD; i++) { // unroll
        let p = i % PER_WORD;
        let w = i / PER_WORD;
        store_result(chunk * outputs + o + i, offsets.y + i * out_step, Pair(best_key[p][w], best_index[p][w]));
    }
}
