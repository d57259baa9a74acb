// Short contiguous rows (a few quads each), read in blocks of ROWS consecutive rows: a block
// is BLOCK_QUADS whole 16-byte quads even where a row is not (rows of 3 FLOAT32: 4 rows, 3
// quads). SEG threads take a block, each loading its quads lane + i * SEG all at once (loads
// in flight); with SEG = 1 a thread keys every element of its rows where it lies (ROW is a
// constant, so every position is), with SEG > 1 (one row a block) each thread folds its quads
// and the segment merges (tree_*.wgsl). Workgroups stride over tiles of WG / SEG blocks, so
// no row costs a division. The plan chose ROW, ROWS and SEG, and checked that the rows are
// packed and the first is aligned to a quad. Constants: WG, SEG, ROW, ROWS.

const BLOCK_QUADS: u32 = ROWS * ROW / PER_QUAD;
const LANE_QUADS: u32 = (BLOCK_QUADS + SEG - 1u) / SEG;

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(num_workgroups) grid: vec3<u32>) {
    let lane = inv.lid % SEG;
    let rows = params.counts.x;
    let blocks = (rows + ROWS - 1u) / ROWS;
    let tiles = (blocks + WG / SEG - 1u) / (WG / SEG);
    let first_quad = params.piece.x / PER_QUAD;
    // The trip count is the workgroup's: every thread reaches the tree's barriers.
    for (var tile = workgroup_index(inv.wid); tile < tiles; tile += grid.x * grid.y * grid.z) {
        // Segments past the last block redo it and store nothing.
        let wanted = tile * (WG / SEG) + inv.lid / SEG;
        let block = min(wanted, blocks - 1u);
        var words: array<vec4<u32>, LANE_QUADS>;
        for (var i = 0u; i < LANE_QUADS; i++) { // unroll
            if (i * SEG + lane < BLOCK_QUADS) {
                words[i] = src[first_quad + block * BLOCK_QUADS + i * SEG + lane];
            }
        }
        for (var u = 0u; u < ROWS; u++) { // unroll
            var best = walk_start(0u);
            if (SEG == 1u) {
                for (var j = 0u; j < ROW; j++) {
                    let e = u * ROW + j;
                    let k = key_of_bits(quad_bits(words[e / PER_QUAD], e % PER_QUAD));
                    if (later_wins(best, k)) {
                        best = Pair(k, j);
                    }
                }
            } else {
                for (var i = 0u; i < LANE_QUADS; i++) { // unroll
                    if (i * SEG + lane < BLOCK_QUADS) {
                        fold_words(words[i], (i * SEG + lane) * PER_QUAD, &best);
                    }
                }
                best = segment_best(inv, best, SEG);
            }
            let row = block * ROWS + u;
            if (lane == 0u && wanted < blocks && row < rows) {
                store_result(row, kept_offsets(row).y, best);
            }
        }
    }
}
