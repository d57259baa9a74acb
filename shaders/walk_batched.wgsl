// The segments kernel's walk over 16-byte quads (load_quads.wgsl), BATCH quads at a time: a
// thread loads quads first + k * step (k = 0, 1, ...) of its chunk a batch at a time before it
// folds any, so that BATCH loads are in flight. With several reduced dimensions an odometer
// carries each quad's offset from the last, without a division.
//
// SKIP_TEST: each quad is first tested against the best key so far (the key module's
// quick_passes), and only a quad that passes gets exact keys. After every batch the best key
// is pooled by the subgroup when all its threads walk one chunk (`pooled`): their quads so far
// all have smaller indices than any of the next batch, so ties with the pooled key are decided
// as the tie rule wants (quick_limit). Otherwise each thread tests against its own best.
// Constants: BATCH, SKIP_TEST, RED_RANK.

// The digits of a reduced element (row-major over the reduced dimensions; the outermost
// unbounded) and its input offset.
struct Odometer {
    digit: array<u32, RED_RANK>,
    offset: u32,
}

fn odometer_at(r: u32) -> Odometer {
    var at: Odometer;
    var rest = r;
    for (var d = i32(RED_RANK) - 1; d >= 1; d--) {
        let size = params.red_size[d / 4][d % 4];
        at.digit[d] = rest % size;
        rest = rest / size;
    }
    at.digit[0] = rest;
    at.offset = reduced_offsets(r).x;
    return at;
}

// Moves `at` on by the element count whose digits are `by`, carrying from dimension to dimension.
// With one or two reduced dimensions the offset moves by `by`'s, and by the outer stride less
// an inner row's where the inner digit wraps (it wraps at most once: both digits are below the
// size): an add and a select a quad, where the general carry multiplies each digit by its stride.
fn odometer_add(at: ptr<function, Odometer>, by: Odometer) {
    if (RED_RANK == 1u) {
        (*at).digit[0] += by.digit[0];
        (*at).offset += by.offset;
        return;
    }
    if (RED_RANK == 2u) {
        let size = params.red_size[0][1];
        let digit = (*at).digit[RED_RANK - 1u] + by.digit[RED_RANK - 1u];  // the inner digit, [1]
        let wrap = digit >= size;
        (*at).digit[RED_RANK - 1u] = select(digit, digit - size, wrap);
        (*at).digit[0] += by.digit[0] + select(0u, 1u, wrap);
        (*at).offset += by.offset + select(0u, params.red_in[0][0] - size * params.red_in[0][1], wrap);
        return;
    }
    var carry = 0u;
    var offset = 0u;
    for (var d = i32(RED_RANK) - 1; d >= 1; d--) {
        let size = params.red_size[d / 4][d % 4];
        let digit = (*at).digit[d] + by.digit[d] + carry;
        carry = select(0u, 1u, digit >= size);
        (*at).digit[d] = select(digit, digit - size, digit >= size);
        offset += (*at).digit[d] * params.red_in[d / 4][d % 4];
    }
    (*at).digit[0] += by.digit[0] + carry;
    (*at).offset = offset + (*at).digit[0] * params.red_in[0][0];
}

// Reduced elements [start, end) of the slice at `base` (start a multiple of PER_QUAD): this
// thread's quads, then the ragged tail one by one.
fn fold_segment(pooled: bool, base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    let quads = (end - start) / PER_QUAD;
    let span = step * BATCH;
    let batches = (quads + span - 1u) / span;  // the same for every thread of a chunk
    var at = odometer_at(start + first * PER_QUAD);
    let stride = odometer_at(step * PER_QUAD);
    var limit = quick_limit((*best).key);  // the walk's start: no quad that may win is skipped
    for (var b = 0u; b < batches; b++) {
        var words: array<vec4<u32>, BATCH>;
        for (var k = 0u; k < BATCH; k++) { // unroll
            if ((b * BATCH + k) * step + first < quads) {
                words[k] = quad((base + at.offset) / PER_QUAD);
            }
            odometer_add(&at, stride);
        }
        for (var k = 0u; k < BATCH; k++) { // unroll
            let q = (b * BATCH + k) * step + first;
            if (q < quads && (!SKIP_TEST || quick_passes(words[k], limit))) {
                fold_words(words[k], start + q * PER_QUAD, best);
            }
        }
        if (SKIP_TEST) {
            limit = quick_limit(threshold_key((*best).key, pooled));
        }
    }
    fold_strided(base, start + quads * PER_QUAD, end, first, step, best);
}
