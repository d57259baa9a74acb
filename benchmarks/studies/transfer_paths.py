"""How fast bytes can move between a NumPy array and the GPU on this machine, path by path.

    python benchmarks/studies/transfer_paths.py [--mib 1024] [--json out.json]

Times, on the default adapter and in one process, every way wgpu offers to move a NumPy
array's bytes to a GPU buffer and back, so that dmlgpu's own transfer path can be set
beside the fastest one measured here (the bound), not beside an estimate:

- host memcpy into preallocated memory with 1 and several threads (the host's own bound);
- ``queue.write_buffer`` of the whole array, and in chunks;
- a ring of reused MAP_WRITE staging buffers, filled by 1 or several threads while the GPU
  copies the previous chunk (chunk sizes and ring depths as listed);
- read-back through a ring of reused MAP_READ staging buffers into a fresh and into a
  reused NumPy array, and the host's copy out of one mapped MAP_READ buffer alone (is the
  memory wgpu maps for reading as fast to read as the host's own?);
- torch's pageable and pinned host-to-device copies where torch with CUDA is importable.

Each line gives the median of three runs after one untimed run, in GB/s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import statistics
import time

import numpy as np
import wgpu

MIB = 1 << 20


def timed(fn, runs: int = 3) -> float:
    """Median seconds of ``runs`` calls after one untimed call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parallel_copy(pool, dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """dst[:] = src, split over ``threads`` (NumPy releases the GIL while it copies)."""
    if threads <= 1:
        np.copyto(dst, src)
        return
    step = -(-len(src) // threads)
    list(pool.map(lambda i: np.copyto(dst[i:i + step], src[i:i + step]), range(0, len(src), step)))


class Paths:
    def __init__(self, nbytes: int):
        self.adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        limits = self.adapter.limits
        self.device = self.adapter.request_device_sync(
            required_limits={"max-buffer-size": limits["max-buffer-size"],
                             "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"]})
        self.queue = self.device.queue
        self.nbytes = nbytes
        self.src = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
        self.dst = self.device.create_buffer(size=nbytes, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
                                             | wgpu.BufferUsage.COPY_SRC)
        self.pool = concurrent.futures.ThreadPoolExecutor(16)

    def wait(self) -> None:
        """Until the queue is idle."""
        self.device._poll_wait()

    def write_buffer(self, chunk: int) -> None:
        for off in range(0, self.nbytes, chunk):
            self.queue.write_buffer(self.dst, off, self.src[off:off + chunk])
        self.queue.submit([])
        self.wait()

    def ring(self, chunk: int, depth: int):
        usage = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
        return [self.device.create_buffer(size=chunk, usage=usage, mapped_at_creation=True) for _ in range(depth)]

    def upload_ring(self, ring, chunk: int, threads: int) -> None:
        """Chunk i is copied into staging i % depth while the GPU copies the chunks before it."""
        pending = [None] * len(ring)
        for i, off in enumerate(range(0, self.nbytes, chunk)):
            k = i % len(ring)
            staging = ring[k]
            if pending[k] is not None:
                pending[k].sync_wait()
            size = min(chunk, self.nbytes - off)
            mapped = np.frombuffer(staging._experimental_get_mapped_range(0, chunk), np.uint8)
            parallel_copy(self.pool, mapped[:size], self.src[off:off + size], threads)
            del mapped
            staging.unmap()
            encoder = self.device.create_command_encoder()
            encoder.copy_buffer_to_buffer(staging, 0, self.dst, off, size)
            self.queue.submit([encoder.finish()])
            pending[k] = staging.map_async(wgpu.MapMode.WRITE)
        for p in pending:
            if p is not None:
                p.sync_wait()

    def read_ring(self, chunk: int, depth: int, threads: int, out: np.ndarray | None) -> np.ndarray:
        usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        key = (chunk, depth)
        if getattr(self, "_read_ring_key", None) != key:
            self._read_ring = [self.device.create_buffer(size=chunk, usage=usage) for _ in range(depth)]
            self._read_ring_key = key
        ring = self._read_ring
        out = np.empty(self.nbytes, np.uint8) if out is None else out
        offsets = list(range(0, self.nbytes, chunk))
        promises = {}

        def start(i):
            off = offsets[i]
            staging = ring[i % depth]
            encoder = self.device.create_command_encoder()
            encoder.copy_buffer_to_buffer(self.dst, off, staging, 0, min(chunk, self.nbytes - off))
            self.queue.submit([encoder.finish()])
            promises[i] = staging.map_async(wgpu.MapMode.READ)

        for i in range(min(depth, len(offsets))):
            start(i)
        for i, off in enumerate(offsets):
            staging = ring[i % depth]
            promises.pop(i).sync_wait()
            size = min(chunk, self.nbytes - off)
            mapped = np.frombuffer(staging._experimental_get_mapped_range(0, chunk), np.uint8)
            parallel_copy(self.pool, out[off:off + size], mapped[:size], threads)
            del mapped
            staging.unmap()
            if i + depth < len(offsets):
                start(i + depth)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="array size in MiB")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    p = Paths(args.mib * MIB)
    n = p.nbytes
    print(f"{p.adapter.info['device']} ({p.adapter.info['backend_type']}); {args.mib} MiB; GB/s, median of 3")
    results = {}

    def report(name: str, seconds: float) -> None:
        results[name] = n / seconds / 1e9
        print(f"  {name:58} {results[name]:7.1f}", flush=True)

    host = np.empty_like(p.src)
    for threads in (1, 4, 8, 16):
        report(f"host memcpy, {threads} threads, reused destination",
               timed(lambda t=threads: parallel_copy(p.pool, host, p.src, t)))
    report("host memcpy, 8 threads, fresh destination",
           timed(lambda: parallel_copy(p.pool, np.empty_like(p.src), p.src, 8)))
    for chunk in (n, 64 * MIB, 16 * MIB):
        report(f"queue.write_buffer, chunks of {chunk // MIB} MiB", timed(lambda c=chunk: p.write_buffer(c)))
    for chunk, depth in ((64 * MIB, 2), (64 * MIB, 4), (16 * MIB, 4), (32 * MIB, 4), (128 * MIB, 3)):
        ring = p.ring(chunk, depth)
        for threads in (1, 4, 8):
            report(f"MAP_WRITE ring {depth} x {chunk // MIB} MiB, {threads} threads",
                   timed(lambda r=ring, c=chunk, t=threads: p.upload_ring(r, c, t)))
        for staging in ring:
            staging.destroy()
    reused = np.empty(n, np.uint8)
    for chunk, depth in ((64 * MIB, 2), (64 * MIB, 4), (16 * MIB, 4)):
        for threads in (1, 8):
            report(f"MAP_READ ring {depth} x {chunk // MIB} MiB, {threads} threads, reused array",
                   timed(lambda c=chunk, d=depth, t=threads: p.read_ring(c, d, t, reused)))
        for threads in (8, 16):
            report(f"MAP_READ ring {depth} x {chunk // MIB} MiB, {threads} threads, fresh array",
                   timed(lambda c=chunk, d=depth, t=threads: p.read_ring(c, d, t, None)))
    chunk = min(n, 64 * MIB)
    staging = p.device.create_buffer(size=chunk, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    staging.map_sync(wgpu.MapMode.READ)
    mapped = np.frombuffer(staging.read_mapped(copy=False), np.uint8)
    for threads in (1, 8, 16):  # the same n bytes, a chunk at a time out of one mapped buffer
        report(f"copy out of a mapped MAP_READ buffer ({chunk // MIB} MiB), {threads} threads",
               timed(lambda t=threads, m=mapped: [parallel_copy(p.pool, host[o:o + chunk], m, t)
                                        for o in range(0, n - chunk + 1, chunk)]))
        report(f"host memcpy of the same chunks, {threads} threads",
               timed(lambda t=threads: [parallel_copy(p.pool, host[o:o + chunk], p.src[:chunk], t)
                                        for o in range(0, n - chunk + 1, chunk)]))
    del mapped
    staging.unmap()
    staging.destroy()
    assert np.array_equal(p.read_ring(64 * MIB, 2, 8, None), p.src), "read-back differs from what was uploaded"
    try:
        import torch

        if torch.cuda.is_available():
            t_src = torch.from_numpy(p.src)
            pinned = t_src.pin_memory()
            report("torch pageable .cuda()", timed(lambda: (t_src.cuda(), torch.cuda.synchronize())))
            report("torch pinned .cuda()", timed(lambda: (pinned.cuda(non_blocking=True), torch.cuda.synchronize())))
            g = t_src.cuda()
            report("torch .cpu() (pageable)", timed(lambda: g.cpu()))
            pinned_out = torch.empty_like(pinned).pin_memory()
            report("torch copy to pinned", timed(lambda: (pinned_out.copy_(g, non_blocking=True), torch.cuda.synchronize())))
    except ImportError:
        pass
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": p.adapter.info["device"], "mib": args.mib, "gbps": results}, f, indent=2)


if __name__ == "__main__":
    main()
