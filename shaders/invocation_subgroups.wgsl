// Which thread this is, for kernels whose threads cooperate, with its subgroup (adapters
// with the subgroup feature).

struct Invocation {
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_size) sg_size: u32,
}
