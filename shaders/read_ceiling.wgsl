// The read ceiling: how fast this stack can read a buffer, to measure the operators against.
// Each thread walks the input with a grid stride in 16-byte loads and folds the words with
// max; it writes one word, so the compiler cannot drop the loads. Standalone: it declares
// its own bindings on the runner's layout and is not composed with common.wgsl.

struct Params {
    // x: input length in vec4<u32> (16-byte units); y, z, w: unused
    counts: vec4<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;  // one word per thread

const WG: u32 = 256u;

// Dispatched on a 1-D grid; the stride is the whole grid, so each warp reads adjacent
// 16-byte chunks on every step.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = params.counts.x;
    let stride = groups.x * WG;
    var acc = vec4<u32>(0u);
    // A binding holds under 2^32 bytes, so n < 2^28 and i + stride cannot wrap.
    for (var i = gid.x; i < n; i += stride) {
        acc = max(acc, src[i]);
    }
    dst[gid.x] = max(max(acc.x, acc.y), max(acc.z, acc.w));
}
