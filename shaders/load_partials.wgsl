// The second pass of a split reduction reads the first pass's pairs (see store_partial.wgsl).

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;

fn partial(slot: u32) -> Pair {
    let p = src[slot];
    return Pair(key_from_partial(p.xy), p.z);
}
