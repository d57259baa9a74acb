// The input bound once, as words, for a pass whose input lies in a buffer it writes (the
// shared layout, runtime/programs.py): there the input is bound writable, and WebGPU refuses
// two writable bindings that overlap, so it is not bound again at binding 4 (src_quads*.wgsl
// do that); its quads are read as four words each. wgsl.writable_input puts this module in
// place of src_quads*.wgsl.

@group(0) @binding(1) var<storage, read_write> src_words: array<u32>;

fn quad(i: u32) -> vec4<u32> {
    let w = 4u * i;
    return vec4<u32>(src_words[w], src_words[w + 1u], src_words[w + 2u], src_words[w + 3u]);
}

// The quads wholly inside the bound range.
fn quad_count() -> u32 {
    return arrayLength(&src_words) / 4u;
}
