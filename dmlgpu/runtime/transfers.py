"""Moving bytes between the host and the GPU: sizes that choose a path, and host-side copies.

Owns the thresholds of the staging ring and the queue writes, and ``copy_in_parts``.
"""

from __future__ import annotations

import numpy as np

#: Reads and writes up to this size go through one staging buffer (or a queue write); larger
#: ones stream through a ring of ``RING_DEPTH`` staging buffers of ``RING_CHUNK`` bytes, the
#: host filling one while the GPU copies another, the host side copied by several threads.
#: Interleaved on the H100's host, 1 GiB: 3 x 128 MiB uploaded at 27.2 GB/s and read back into
#: a new array at 20.1, a NumPy-in argmax took 39.0 ms; 4 x 64 MiB: 26.2, 19.0, 41.8 ms.
RING_CHUNK = 128 << 20
RING_DEPTH = 3
STREAM_ABOVE = 16 << 20
#: Host threads that copy a large transfer's chunks into staging memory (writes) and out of
#: it (reads). Reads into a new array spend as much time on its page faults as on the copy,
#: and faults run in parallel: on the H100's 16-core host, 1 GiB read back at 16.2 GB/s with
#: 16 threads against 13.4 with 8, where uploads ran at 24.0 against 25.2 (interleaved).
WRITE_THREADS = 8
READ_THREADS = 16
#: Writes up to this size go through wgpu's queue; larger ones (up to ``STREAM_ABOVE``) are
#: copied into a reused mapped staging buffer. wgpu-native makes a new staging buffer for
#: each queue write: in the full suite on the H100 (torch and CuPy in the process, after the
#: 1 GiB cases) a 600 KB one took 3.4 ms, where a fresh process took 50 us.
QUEUE_WRITE_MAX = 64 << 10


def copy_in_parts(pool, dst: np.ndarray, src: np.ndarray, parts: int) -> None:
    """dst[:] = src (bytes) in ``parts`` slices of whole 64-byte lines, on ``pool``'s threads
    (NumPy lets go of the GIL while it copies)."""
    step = ((-(-src.nbytes // parts)) + 63) & ~63
    for part in [pool.submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, src.nbytes, step)]:
        part.result()
