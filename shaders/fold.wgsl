// Folding input elements into a best (key, index) pair; used by the first pass of every
// reduction kernel. Needs a loader (load_key) and the key module.

// A work item of a first pass: one chunk of one output's reduced elements, [start, end),
// of the slice whose first input and output elements are at base.
struct Work {
    start: u32,
    end: u32,
    base: vec2<u32>,
}

// Work item `item`, numbered chunk-major (item = chunk * outputs + output), as the
// partial pairs are stored. ONE_CHUNK: the item is the output, found without a division.
fn work_of(item: u32) -> Work {
    if (ONE_CHUNK) {
        return Work(0u, params.counts.y, kept_offsets(item));
    }
    let outputs = params.counts.x;
    let output = item % outputs;
    let chunk = item / outputs;
    let start = chunk * params.split.y;
    let end = start + min(params.split.y, params.counts.y - start);
    return Work(start, end, kept_offsets(output));
}

// Where a thread's walk starts: the smallest key at the chunk's first index. It can win
// only where every key of the chunk is the smallest (INCREASING), and then the first index
// is the answer anyway; a real element with an equal key has a larger index, so it beats
// the start under DECREASING. So no element need be loaded to start, and a thread with no
// elements adds nothing wrong to a merge.
fn walk_start(start: u32) -> Pair {
    return Pair(key_min(), start);
}

// The best pair of reduced elements [start, end), taken one by one with stride `step`
// from `start + first`. Nothing happens when the range holds no element for this thread.
fn fold_strided(base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    if (first >= end - start) {
        return;
    }
    // Indices only grow along a thread's walk, and best starts at the chunk's first.
    var r = start + first;
    loop {
        let k = load_key(base + reduced_offsets(r).x);
        if (later_wins(*best, k)) {
            *best = Pair(k, r);
        }
        if (end - r <= step) {  // written so that r never wraps past 2^32 - 1
            break;
        }
        r += step;
    }
}
