// Shared by every kernel: the parameters, addressing, and the (key, index) merge with its tie rule.
// Constants from the plan: KEPT_RANK, RED_RANK, INCREASING, REMAP.

struct Params {
    // output count, reduced count, grid width, grid width * height
    counts: vec4<u32>,
    // split (chunks per output), elements per chunk, work items (outputs * split), and the
    // output elements from the piece's output base that a HARDMAX store may write
    split: vec4<u32>,
    // a piece of a tensor beyond one binding (pieces.py): the element offsets of its input
    // and output in their bound windows, its first reduced index, its first partial slot
    piece: vec4<u32>,
    kept_size: array<vec4<u32>, 2>,
    kept_in: array<vec4<u32>, 2>,
    kept_out: array<vec4<u32>, 2>,
    red_size: array<vec4<u32>, 2>,
    red_in: array<vec4<u32>, 2>,
    red_out: array<vec4<u32>, 2>,
    red_index: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<uniform> params: Params;

// A candidate: its order-preserving key and its index within the reduced sub-tensor.
struct Pair {
    key: Key,
    index: u32,
}

// The linear index of a workgroup on a 3-D grid.
fn workgroup_index(wid: vec3<u32>) -> u32 {
    return wid.z * params.counts.w + wid.y * params.counts.z + wid.x;
}

// Input and output element offsets of output `o`: row-major over the kept dimensions,
// from the piece's first elements.
fn kept_offsets(o: u32) -> vec2<u32> {
    var rest = o;
    var offsets = params.piece.xy;
    for (var d = i32(KEPT_RANK) - 1; d >= 0; d--) {
        let size = params.kept_size[d / 4][d % 4];
        let c = select(rest % size, rest, d == 0);
        rest = rest / size;
        offsets += c * vec2<u32>(params.kept_in[d / 4][d % 4], params.kept_out[d / 4][d % 4]);
    }
    return offsets;
}

// Input and output element offsets of reduced index `r` (row-major, ascending axes).
// The outermost dimension needs no division, so one reduced dimension costs a multiply.
fn reduced_offsets(r: u32) -> vec2<u32> {
    var rest = r;
    var offsets = vec2<u32>(0u, 0u);
    for (var d = i32(RED_RANK) - 1; d >= 1; d--) {
        let size = params.red_size[d / 4][d % 4];
        offsets += (rest % size) * vec2<u32>(params.red_in[d / 4][d % 4], params.red_out[d / 4][d % 4]);
        rest = rest / size;
    }
    if (RED_RANK > 0u) {
        offsets += rest * vec2<u32>(params.red_in[0][0], params.red_out[0][0]);
    }
    return offsets;
}

// The index to report for reduced index `r` of this piece: from the piece's first index,
// row-major (REMAP false) or through the whole reduction's index strides (pieces.py).
fn reported_index(r: u32) -> u32 {
    if (!REMAP) {
        return params.piece.z + r;
    }
    var rest = r;
    var index = params.piece.z;
    for (var d = i32(RED_RANK) - 1; d >= 1; d--) {
        let size = params.red_size[d / 4][d % 4];
        index += (rest % size) * params.red_index[d / 4][d % 4];
        rest = rest / size;
    }
    return index + rest * params.red_index[0][0];
}

// The tie rule, applied at every merge: the larger key wins; on equal keys the smaller
// index (INCREASING) or the larger (DECREASING). Keys are ordered so that the wanted
// extreme is the largest (see the key_*.wgsl files).
fn better(a: Pair, b: Pair) -> bool {
    if (key_gt(a.key, b.key)) {
        return true;
    }
    if (key_gt(b.key, a.key)) {
        return false;
    }
    return select(a.index > b.index, a.index < b.index, INCREASING);
}

// The tie rule when `key`'s index is known to be larger than best's, as in a thread's
// own walk through its elements: strictly greater wins (INCREASING), or equal (DECREASING).
fn later_wins(best: Pair, key: Key) -> bool {
    return select(key_gt(key, best.key), !key_gt(best.key, key), !INCREASING);
}

fn merge(a: Pair, b: Pair) -> Pair {
    if (better(a, b)) {
        return a;
    }
    return b;
}
