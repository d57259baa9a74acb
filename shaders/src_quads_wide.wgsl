// The input as 16-byte quads read in two 64-bit halves (shader-int64): the same bytes as
// src_quads.wgsl in half the loads. A CPU adapter that runs each load of a vector component
// for each lane on its own (lavapipe before Mesa 23 does) reads twice as fast this way.

@group(0) @binding(1) var<storage, read> src: array<vec2<u64>>;

fn quad(i: u32) -> vec4<u32> {
    let halves = src[i];
    // u32() of a u64 keeps its low 32 bits
    return vec4<u32>(u32(halves.x), u32(halves.x >> 32u), u32(halves.y), u32(halves.y >> 32u));
}
