// Which thread this is, for kernels whose threads cooperate (adapters without subgroups).
// The workgroup's id is a parameter of its own: WGSL's uniformity analysis (which browsers
// enforce) takes a parameter as a whole, and a struct holding the thread's index is not uniform,
// so a workgroup index read from it would put the tree's barriers in non-uniform control flow.

struct Invocation {
    @builtin(local_invocation_index) lid: u32,
}
