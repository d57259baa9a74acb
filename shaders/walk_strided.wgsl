// The segments kernel's walk before batches (Tuning.batch = 0): the loader's fold_range, a
// quad (or an element) at a time. walk_batched.wgsl is the other.

fn fold_segment(pooled: bool, base: u32, start: u32, end: u32, first: u32, step: u32, best: ptr<function, Pair>) {
    fold_range(base, start, end, first, step, best);
}
