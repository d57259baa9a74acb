// The input as 16-byte quads of 32-bit words (load_quads.wgsl reads it through quad()).

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;

fn quad(i: u32) -> vec4<u32> {
    return src[i];
}
