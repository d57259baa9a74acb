"""The runtime: the only package that touches wgpu, one room per job.

- ``adapters``: the wgpu instance, choosing adapters, opening and closing devices.
- ``interrupts``: Ctrl-C held back while GPU work is in flight.
- ``public`` / ``native`` (with ``hot``, the C hot path): the two backends that record,
  submit and map.
- ``memory``: buffer usages and sizes, the pools of kept buffers.
- ``transfers``: the paths bytes take between the host and the GPU.
- ``runner``: orders work on the queue and owns the device's lifetime; ``commits``: small
  calls from many threads in one submission.
"""
