// The copy ceiling: how fast this stack can read a buffer and write the same bytes to
// another, to measure HARDMAX (which reads its input and writes an output as large) against.
// Grid-stride loop, 16-byte loads and stores. Standalone: it declares its own bindings on
// the runner's layout and is not composed with common.wgsl.

struct Params {
    // x: length to copy in vec4<u32> (16-byte units); y, z, w: unused
    counts: vec4<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

const WG: u32 = 256u;

// Dispatched on a 1-D grid; the stride is the whole grid.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = params.counts.x;
    let stride = groups.x * WG;
    // A binding holds under 2^32 bytes, so n < 2^28 and i + stride cannot wrap.
    for (var i = gid.x; i < n; i += stride) {
        dst[i] = src[i];
    }
}
