// Which thread this is, for kernels whose threads cooperate (adapters without subgroups).

struct Invocation {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}
