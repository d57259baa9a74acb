// reduce_columns's results, an output at a time through the store module's store_result.
// Part p of quad j, lane w holds output j * PER_QUAD + w * PER_WORD + p of the thread's;
// they lie in one kept row, a step of the row's output stride apart.

fn store_outputs(slot: u32, out_base: u32, keys: array<array<vec4<u32>, PER_WORD>, COLQ>,
                 indices: array<array<vec4<u32>, PER_WORD>, COLQ>) {
    var k = keys;
    var r = indices;
    let out_step = params.kept_out[(KEPT_RANK - 1u) / 4u][(KEPT_RANK - 1u) % 4u];
    for (var i = 0u; i < COL_OUTPUTS; i++) { // unroll
        let j = i / PER_QUAD;
        let p = i % PER_WORD;
        let w = (i % PER_QUAD) / PER_WORD;
        store_result(slot + i, out_base + i * out_step, Pair(k[j][p][w], r[j][p][w]));
    }
}
