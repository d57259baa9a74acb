// The segments kernel's walk over 16-byte quads of 64-bit elements (load_pair_quads.wgsl): a
// thread loads two of its quads, first + k * step, before it folds either (loads in flight),
// then takes the ragged tail one by one.
//
// SKIP_TEST: each quad is first tested on its elements' high words against the best key's
// high word (the key module's quick_passes64), and only a quad that passes gets exact keys.
// After every round the best's high word is pooled by the subgroup when all its threads walk
// one chunk (`pooled`, threshold_key). An element whose key's high word is below the best's
// can neither beat nor tie it, whatever its index, so a pooled best needs no tie rule.
// Constants: SKIP_TEST.

fn fold_segment(pooled: bool, base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    let quads = (end - start) / PER_QUAD;
    let rounds = (quads + 2u * step - 1u) / (2u * step);  // the same for every thread of a chunk
    var limit = quick_limit64(key_high((*best).key));  // the walk's start: everything passes
    for (var i = 0u; i < rounds; i++) {
        let qa = first + 2u * i * step;
        let qb = qa + step;
        var a: vec4<u32>;
        var b: vec4<u32>;
        if (qa < quads) {
            a = quad(quad_at(base, start + qa * PER_QUAD));
        }
        if (qb < quads) {
            b = quad(quad_at(base, start + qb * PER_QUAD));
        }
        if (qa < quads && (!SKIP_TEST || quick_passes64(a, limit))) {
            fold_words(a, start + qa * PER_QUAD, best);
        }
        if (qb < quads && (!SKIP_TEST || quick_passes64(b, limit))) {
            fold_words(b, start + qb * PER_QUAD, best);
        }
        if (SKIP_TEST) {
            limit = quick_limit64(threshold_key(key_high((*best).key), pooled));
        }
    }
    fold_strided(base, start + quads * PER_QUAD, end, first, step, best);
}
