// The input as 16-byte quads of 32-bit words (load_quads.wgsl reads it through quad()).

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;

// The same range as words, for the elements read one by one (load_quads.wgsl): binding 4.
@group(0) @binding(4) var<storage, read> src_words: array<u32>;

fn quad(i: u32) -> vec4<u32> {
    return src[i];
}

// The quads wholly inside the bound range: its runtime length (a range may end inside a quad).
fn quad_count() -> u32 {
    return arrayLength(&src);
}
