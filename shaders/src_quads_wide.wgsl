// The input as 16-byte quads read in two 64-bit halves (shader-int64): the same bytes as
// src_quads.wgsl in half the loads. A CPU adapter that runs each load of a vector component
// for each lane on its own (lavapipe before Mesa 23 does) reads twice as fast this way.

@group(0) @binding(1) var<storage, read> src: array<vec2<u64>>;

// The same range as words, for the elements read one by one (load_quads.wgsl): binding 4.
@group(0) @binding(4) var<storage, read> src_words: array<u32>;

fn quad(i: u32) -> vec4<u32> {
    let halves = src[i];
    // u32() of a u64 keeps its low 32 bits
    return vec4<u32>(u32(halves.x), u32(halves.x >> 32u), u32(halves.y), u32(halves.y >> 32u));
}

// The quads wholly inside the bound range: its runtime length (a range may end inside a quad).
fn quad_count() -> u32 {
    return arrayLength(&src);
}
