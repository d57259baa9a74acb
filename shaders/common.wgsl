// Shared by every kernel: the parameters, the input binding, addressing and the merge rule.
// Constants from the plan: WG, KEPT_RANK, RED_RANK, INCREASING.

struct Params {
    // output count, reduced count, grid width, grid width * height
    counts: vec4<u32>,
    kept_size: array<vec4<u32>, 2>,
    kept_in: array<vec4<u32>, 2>,
    kept_out: array<vec4<u32>, 2>,
    red_size: array<vec4<u32>, 2>,
    red_in: array<vec4<u32>, 2>,
    red_out: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;

// The linear output index of a workgroup on a 3-D grid.
fn output_index(wid: vec3<u32>) -> u32 {
    return wid.z * params.counts.w + wid.y * params.counts.z + wid.x;
}

// Input and output element offsets of output `o`: row-major over the kept dimensions.
fn kept_offsets(o: u32) -> vec2<u32> {
    var rest = o;
    var offsets = vec2<u32>(0u, 0u);
    for (var d = i32(KEPT_RANK) - 1; d >= 0; d--) {
        let size = params.kept_size[d / 4][d % 4];
        let c = rest % size;
        rest = rest / size;
        offsets += c * vec2<u32>(params.kept_in[d / 4][d % 4], params.kept_out[d / 4][d % 4]);
    }
    return offsets;
}

// Input and output element offsets of reduced index `r` (row-major, ascending axes).
fn reduced_offsets(r: u32) -> vec2<u32> {
    var rest = r;
    var offsets = vec2<u32>(0u, 0u);
    for (var d = i32(RED_RANK) - 1; d >= 0; d--) {
        let size = params.red_size[d / 4][d % 4];
        let c = rest % size;
        rest = rest / size;
        offsets += c * vec2<u32>(params.red_in[d / 4][d % 4], params.red_out[d / 4][d % 4]);
    }
    return offsets;
}

// The tie rule, applied at every merge: does (ka, ia) beat (kb, ib)?
// Keys are ordered so that the wanted extreme is the largest (see the key_*.wgsl files).
fn better(ka: Key, ia: u32, kb: Key, ib: u32) -> bool {
    if (key_gt(ka, kb)) {
        return true;
    }
    if (key_gt(kb, ka)) {
        return false;
    }
    return select(ia > ib, ia < ib, INCREASING);
}
