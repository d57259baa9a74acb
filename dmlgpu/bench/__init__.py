"""The benchmark behind ``dmlgpu bench``: each case's GPU time beside an in-run ceiling and the peers.

How it measures (docs/benchmarks.md says how to read what it prints):

- Once per run, a few hundred milliseconds of real work (the read-ceiling kernel) before
  anything is timed: the GPU starts at a low clock and ramps under load.
- Per case, every variant is dispatched twice untimed, then the variants (ours, the ceiling
  kernel, torch / CuPy when importable) are timed interleaved, in rounds, and medians are
  reported. GPU times come from timestamp queries (CUDA events for the peers).
- GB/s = the bytes that must move (the input read once, the output written once) / GPU time.
  Peers are divided by the same byte count, so "x torch" is simply their time over ours.
- The ceiling is a standalone WGSL kernel over the same input buffer in the same process:
  ``shaders/read_ceiling.wgsl`` (16-byte loads, grid-stride) for ARGMAX/ARGMIN,
  ``shaders/copy_ceiling.wgsl`` (read + write the same bytes) for HARDMAX.
- End-to-end wall time (NumPy in, NumPy out, through ``dmlgpu.argmax`` and friends) is
  reported apart, and only for small inputs and latency cases; latency cases also time a
  GPU-resident input with the result read back to NumPy.
- Each result is checked once against the oracle (``dmlgpu.oracle``); a wrong answer fails the run.

The modules, in the order a run uses them:

- ``run``: ``main`` (what ``dmlgpu bench`` runs) and ``Bench``, the run's state, which hands
  each case to the module of its kind (``gpu_cases``, ``transfers``).
- ``cases``: the suites as data (``benchmarks/suites/<name>.json``, shipped as the package
  ``dmlgpu.suites``), and each case's random input.
- ``peers``: torch and CuPy on the same data.
- ``ceilings``: the ceiling kernels, and the warm-up.
- ``gpu_cases``: a "gpu" case, ours beside the ceiling and the peers, and its wall times.
- ``transfers``: the "numpy" and "loop" cases, the host's side of a call.
- ``timing``: interleaved rounds, wall-clock timers, the floor of a small call, medians and
  percentiles (and, when they move here, the runner's timers the bench alone uses).
- ``report``: the text lines, the JSON report and the plot.
"""

from .cases import OPS, Case, Suite, host_data, load_suite
from .ceilings import CEILING_MAX_GROUPS, CEILING_WG, COPY_CEILING_UNROLL, Ceiling, warm_up
from .peers import CupyPeer, TorchPeer, find_peers
from .report import header, line, plot, report_header, write_json
from .run import Bench, main
from .timing import FloorTimer, call_timer, interleaved, interleaved_walls, native_floor_timer
from .transfers import LOOP_CALLS

__all__ = [
    "CEILING_MAX_GROUPS", "CEILING_WG", "COPY_CEILING_UNROLL", "LOOP_CALLS", "OPS", "Bench", "Case", "Ceiling",
    "CupyPeer", "FloorTimer", "Suite", "TorchPeer", "call_timer", "find_peers", "header", "host_data", "interleaved",
    "interleaved_walls", "line", "load_suite", "main", "native_floor_timer", "plot", "report_header", "warm_up",
    "write_json",
]
