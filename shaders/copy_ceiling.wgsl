// The copy ceiling: how fast this stack can read a buffer and write the same bytes to
// another, to measure HARDMAX (which reads its input and writes an output as large) against.
// Grid-stride loop, 16-byte loads and stores, UNROLL of each a thread a step (all loads
// first, written out so that the array lives in registers), so that enough is in flight.
// Standalone: it declares its own bindings on the runner's layout and is not composed with
// common.wgsl.

struct Params {
    // x: length to copy in vec4<u32> (16-byte units); y, z, w: unused
    counts: vec4<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

const WG: u32 = 256u;
// UNROLL: declared ahead of this text by bench.Ceiling, which writes out the loops marked below.

// Dispatched on a 1-D grid; the stride is the whole grid, each thread's UNROLL quads of a
// step one grid apart, so every load and store of a warp covers 512 contiguous bytes.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = params.counts.x;
    let stride = groups.x * WG;
    // A binding holds under 2^32 bytes, so n < 2^28 and no index below wraps.
    for (var i = gid.x; i < n; i += UNROLL * stride) {
        var quads: array<vec4<u32>, UNROLL>;
        for (var k = 0u; k < UNROLL; k++) { // unroll
            if (i + k * stride < n) {
                quads[k] = src[i + k * stride];
            }
        }
        for (var k = 0u; k < UNROLL; k++) { // unroll
            if (i + k * stride < n) {
                dst[i + k * stride] = quads[k];
            }
        }
    }
}
