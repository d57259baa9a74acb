// reduce_columns's ARGMAX / ARGMIN results into INT32 or UINT32 where a thread's outputs are
// runs of four contiguous elements from a multiple of four, with nothing to merge and
// indices reported row-major (the plan checked): one 16-byte store a run, where an output
// at a time makes four scalar stores to each 16 bytes. Outputs laid out as store_columns.wgsl says.

@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

fn store_outputs(slot: u32, out_base: u32, keys: array<array<vec4<u32>, PER_WORD>, COLQ>,
                 indices: array<array<vec4<u32>, PER_WORD>, COLQ>) {
    var r = indices;
    for (var m = 0u; m < COL_OUTPUTS / 4u; m++) { // unroll
        var four: vec4<u32>;
        for (var t = 0u; t < 4u; t++) { // unroll
            let i = m * 4u + t;
            four[t] = r[i / PER_QUAD][i % PER_WORD][(i % PER_QUAD) / PER_WORD];
        }
        dst[out_base / 4u + m] = four + vec4<u32>(params.piece.z);
    }
}
