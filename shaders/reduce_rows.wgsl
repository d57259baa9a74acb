// Short contiguous rows (a few quads each), read in blocks of ROWS consecutive rows: a block
// is BLOCK_QUADS whole 16-byte quads even where a row is not (rows of 3 FLOAT32: 4 rows, 3
// quads). SEG threads take a block, each loading its quads lane + i * SEG all at once (loads
// in flight). With SEG = 1 a thread keys every element of its rows where it lies: element e
// of the block is part e % PER_QUAD of quad e / PER_QUAD and element e % ROW of row e / ROW,
// constants once the loops are written out. With SEG > 1 (one row a block) each thread
// folds its quads and the segment merges (tree_*.wgsl). Workgroups stride over tiles of
// WG / SEG blocks, so no row costs a division. The plan chose ROW, ROWS and SEG, and checked
// that the rows are packed and the first is aligned to a quad. The last block may end inside
// a quad, or past the bound range: the tiles whose blocks lie wholly inside it are the hot
// loop, their quads loaded as they are; the last tile or two follow, a row a thread, each
// element read as a word (load_key).
// ROW_STAGE (SEG = 1): a tile's results go through workgroup memory, so that consecutive
// threads store consecutive rows. PREFETCH (planned with ROW_STAGE): a thread loads its next
// tile's quads before it keys this tile's, so that its loads stay in flight while it works and
// through the barriers.
// Constants: WG, SEG, ROW, ROWS, ROW_STAGE, PREFETCH.

const BLOCK_QUADS: u32 = ROWS * ROW / PER_QUAD;
const LANE_QUADS: u32 = (BLOCK_QUADS + SEG - 1u) / SEG;
// A thread's own quads with SEG = 1, else 0 (so that the loop over them stays unwritten).
const SOLO_QUADS: u32 = BLOCK_QUADS * (1u / SEG);
const STAGED_ROWS: u32 = select(1u, WG * ROWS, ROW_STAGE);

var<workgroup> staged: array<Pair, STAGED_ROWS>;

// The quads lane `lane` loads of its segment's block in tile `tile` (a tile past the last
// block's redoes the last block).
fn block_quads(tile: u32, lid: u32, lane: u32, blocks: u32, first_quad: u32) -> array<vec4<u32>, LANE_QUADS> {
    let block = min(tile * (WG / SEG) + lid / SEG, blocks - 1u);
    var words: array<vec4<u32>, LANE_QUADS>;
    for (var i = 0u; i < LANE_QUADS; i++) { // unroll
        if (i * SEG + lane < BLOCK_QUADS) {
            words[i] = quad(first_quad + block * BLOCK_QUADS + i * SEG + lane);
        }
    }
    return words;
}

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) grid: vec3<u32>) {
    let lane = inv.lid % SEG;
    let rows = params.counts.x;
    let blocks = (rows + ROWS - 1u) / ROWS;
    let tiles = (blocks + WG / SEG - 1u) / (WG / SEG);
    let first_quad = params.piece.x / PER_QUAD;
    // The tiles of blocks wholly inside the bound range.
    let whole_tiles = min(blocks, (quad_count() - first_quad) / BLOCK_QUADS) / (WG / SEG);
    let stride = grid.x * grid.y * grid.z;
    var tile = workgroup_index(wid);
    var words: array<vec4<u32>, LANE_QUADS>;
    if (PREFETCH && tile < whole_tiles) {
        words = block_quads(tile, inv.lid, lane, blocks, first_quad);
    }
    // The trip count is the workgroup's: every thread reaches the tree's barriers.
    for (; tile < whole_tiles; tile += stride) {
        // Segments past the last block redo it and store nothing.
        let wanted = tile * (WG / SEG) + inv.lid / SEG;
        let block = min(wanted, blocks - 1u);
        if (!PREFETCH) {
            words = block_quads(tile, inv.lid, lane, blocks, first_quad);
        }
        var ahead: array<vec4<u32>, LANE_QUADS>;
        if (PREFETCH && tile + stride < whole_tiles) {
            ahead = block_quads(tile + stride, inv.lid, lane, blocks, first_quad);
        }
        var best = walk_start(0u);
        if (SEG == 1u) {
            for (var q = 0u; q < SOLO_QUADS; q++) { // unroll
                for (var p = 0u; p < PER_QUAD; p++) { // unroll
                    let e = q * PER_QUAD + p;
                    let j = e % ROW;
                    if (j == 0u) {
                        best = walk_start(0u);
                    }
                    let k = key_of_bits(quad_bits(words[q], p));
                    if (later_wins(best, k)) {
                        best = Pair(k, j);
                    }
                    let row = block * ROWS + e / ROW;
                    if (ROW_STAGE && j == ROW - 1u) {
                        staged[inv.lid * ROWS + e / ROW] = best;
                    } else if (j == ROW - 1u && wanted < blocks && row < rows) {
                        store_result(row, kept_offsets(row).y, best);
                    }
                }
            }
            if (ROW_STAGE) {
                workgroupBarrier();
                for (var u = 0u; u < ROWS; u++) { // unroll
                    let row = tile * WG * ROWS + u * WG + inv.lid;
                    if (row < rows) {
                        store_result(row, kept_offsets(row).y, staged[u * WG + inv.lid]);
                    }
                }
                workgroupBarrier();
            }
        } else {
            for (var i = 0u; i < LANE_QUADS; i++) { // unroll
                if (i * SEG + lane < BLOCK_QUADS) {
                    fold_words(words[i], (i * SEG + lane) * PER_QUAD, &best);
                }
            }
            best = segment_best(inv, best, SEG);
            if (lane == 0u && wanted < blocks) {
                store_result(block, kept_offsets(block).y, best);
            }
        }
        if (PREFETCH) {
            words = ahead;
        }
    }
    // The rest, the last tile or two: a block's rows one by one, their elements read as words.
    for (; tile < tiles; tile += stride) {
        let block = tile * (WG / SEG) + inv.lid / SEG;
        if (lane == 0u && block < blocks) {
            for (var row = block * ROWS; row < min(block * ROWS + ROWS, rows); row++) {
                let offsets = kept_offsets(row);
                var best = walk_start(0u);
                fold_strided(offsets.x, 0u, ROW, 0u, 1u, &best);
                store_result(row, offsets.y, best);
            }
        }
    }
}
