"""Moving bytes between the host and the GPU: queue writes, reused staging, the staging ring,
host-side copies on several threads, and reads of small outputs in place.

Owns ``Transfers`` (one per runner): the sizes that choose a path, the host threads that copy
a large transfer's chunks, and the maps of small outputs read in place; it tells its
``flow.Flow`` what its large transfers did. May touch the runner's queue (it submits its
copies and starts its maps there, under the runner's lock) and its memory (staging buffers
come from and go back to ``Memory``'s pools).

**Transfers beside results.** Threads that share a device each stream their own upload
through a ring of their own (``Rings``), so that while one thread waits for its result (the
GPU reducing its chunk) another fills and submits the next chunk's staging: several chunks in
flight on one device, as many as there are threads (Dask's: a worker's). Nothing here makes
one thread wait for another's result; the waits themselves must not either, which is why the
waits here (for a ring's staging, for a result) poll without blocking after their spin
(``nap=True``, ``hot.NAP_S``). ``Flow.beside`` counts the staging chunks filled while another
thread's result was still on its way.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Protocol, cast

import numpy as np
import wgpu

from .flow import Flow
from .interrupts import interrupts_held
from .memory import MAP_READ, MAP_WRITE, READABLE, word_size
from .native import Handle, NativePath

if TYPE_CHECKING:
    from .runner import Runner

#: Reads and writes up to this size go through one staging buffer (or a queue write); larger
#: ones stream through a ring of ``RING_DEPTH`` staging buffers of ``RING_CHUNK`` bytes, the
#: host filling one while the GPU copies another, the host side copied by several threads.
#: Three chunks of 128 MiB went faster than four of 64 (benchmarks/LOG.md, "The settings' measurements").
RING_CHUNK = 128 << 20
RING_DEPTH = 3
STREAM_ABOVE = 16 << 20
#: Host threads that copy a large transfer's chunks into staging memory (writes) and out of
#: it (reads). Reads into a new array spend as much time on its page faults as on the copy,
#: and faults run in parallel, so reads take more threads than writes (benchmarks/LOG.md, "The settings' measurements").
WRITE_THREADS = 8
READ_THREADS = 16
#: Writes up to this size go through wgpu's queue; larger ones (up to ``STREAM_ABOVE``) are
#: copied into a reused mapped staging buffer. wgpu-native makes a new staging buffer for
#: each queue write, which a busy process pays dearly for (benchmarks/LOG.md, "The settings' measurements").
QUEUE_WRITE_MAX = 64 << 10
#: Host copies of at least this many bytes run on several threads.
PARALLEL_COPY_ABOVE = 4 << 20
#: Staging rings of each direction that may exist at once: transfers from several threads
#: (Dask's threaded scheduler) each take one, the ones beyond wait for one to come back; the
#: bus is shared, so a few streams in flight fill it, and each ring is ``RING_DEPTH`` x
#: ``RING_CHUNK`` of host memory mapped for the GPU.
MAX_RINGS = 4


class Rows(Protocol):
    """Bytes to upload that are gathered row by row as they go (``layout.Gather``: a view's
    elements without its gaps): ``nbytes`` in all, ``row_bytes`` a row, ``copy_rows`` copying
    rows into a destination, and ``x``, the array they come from."""

    nbytes: int
    row_bytes: int
    x: np.ndarray

    def copy_rows(self, dst: np.ndarray, first: int, count: int) -> None: ...


def all_done(parts: list) -> None:
    """Wait for every future of ``parts``, then raise the first one's error if any failed: a
    part still copying into mapped memory when its caller gives the memory back would write
    into memory that is gone."""
    concurrent.futures.wait(parts)
    for part in parts:
        part.result()


def copy_in_parts(pool, dst: np.ndarray, src: np.ndarray, parts: int) -> None:
    """dst[:] = src (bytes) in ``parts`` slices of whole 64-byte lines, on ``pool``'s threads
    (NumPy lets go of the GIL while it copies)."""
    step = ((-(-src.nbytes // parts)) + 63) & ~63
    all_done([pool.submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, src.nbytes, step)])


class DroppedOnFailure:
    """Destroy the staging buffer ``staging`` if the block fails (it may be mid-map, so it must
    not go back to a pool), wgpu's errors raised as ours. (A class: a small read passes
    through one.)"""

    __slots__ = ("runner", "staging")

    def __init__(self, runner: "Runner", staging):
        self.runner, self.staging = runner, staging

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, err, tb) -> None:
        if err is None:
            return
        with self.runner.lock:
            self.runner.memory.destroy(self.staging)
        if isinstance(err, wgpu.GPUError):
            raise self.runner.gpu_error(err) from None


class HostCopies:
    """Copies on the host's side of a large transfer, into staging memory (writes) and out of
    it (reads), split over a pool of threads of the runner's, started with its first ring."""

    def __init__(self, cores: int):
        self.parallel_above = PARALLEL_COPY_ABOVE  # (the tests shrink it)
        self.threads = {True: min(WRITE_THREADS, cores), False: min(READ_THREADS, cores)}  # by write
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def start(self) -> None:
        """The pool of threads, made once. Under the runner's lock."""
        threads = max(self.threads.values())
        if self._pool is None and threads > 1:
            self._pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="dmlgpu-copy")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def copy(self, dst: np.ndarray, src: np.ndarray, write: bool) -> None:
        """dst[:] = src on the threads of a write or a read (NumPy lets go of the GIL while it copies)."""
        pool, threads = self._pool, self.threads[write]
        if pool is None or threads < 2 or src.nbytes < self.parallel_above:
            np.copyto(dst, src)
            return
        copy_in_parts(pool, dst, src, threads)

    def gather(self, dst: np.ndarray, source: Rows, first_row: int, rows: int) -> None:
        """Rows of a view gathered into ``dst`` on the write threads (``Rows.copy_rows``)."""
        pool, threads = self._pool, self.threads[True]
        if pool is None or threads < 2 or dst.nbytes < self.parallel_above:
            source.copy_rows(dst, first_row, rows)
            return
        step, size = -(-rows // threads), source.row_bytes
        parts = []
        for r in range(first_row, first_row + rows, step):
            count = min(step, first_row + rows - r)
            at = (r - first_row) * size
            parts.append(pool.submit(source.copy_rows, dst[at:at + count * size], r, count))
        all_done(parts)


class Rings:
    """The staging rings of large transfers (MAP_WRITE for uploads, MAP_READ for reads), each
    taken by one transfer at a time: at most ``most`` of a kind out at once."""

    def __init__(self, runner: "Runner"):
        self.runner: Runner = cast("Runner", weakref.proxy(runner))
        self.most = MAX_RINGS
        self._out = {True: 0, False: 0}  # rings taken by transfers in flight, by write
        self.back = threading.Condition(runner.lock)  # a ring came back (or the device closed)

    def take(self, write: bool, chunk: int, depth: int) -> list:
        """A ring of ``depth`` buffers of ``chunk`` bytes: a kept one, else a new one while
        fewer than ``most`` are out, else the next to come back. Each entry is [buffer,
        pending map]."""
        runner, memory = self.runner, self.runner.memory
        with runner.lock:
            runner.check()
            kept = memory.rings.setdefault(write, [])
            while not kept and self._out[write] >= self.most:
                self.back.wait()
                runner.check()
            if kept:
                ring = kept.pop()
            else:
                usage = MAP_WRITE if write else MAP_READ
                ring = [[memory.create(chunk, usage), None] for _ in range(depth)]
            self._out[write] += 1
            return ring

    def ready(self, entry: list, whole: int) -> None:
        """Wait until ``entry``'s staging buffer (``whole`` bytes) is mapped for writing: once
        the GPU has copied out of it (its map started after that copy's submit), or, in a new
        ring, once its first map (started here) has landed."""
        runner, path = self.runner, self.runner.path
        if entry[1] is None:
            entry[1] = path.new_map(entry[0], whole)
            with runner.lock:
                path.start_map(entry[1], write=True)
        path.wait(entry[1], None, nap=True)

    def give(self, write: bool, ring: list, ok: bool) -> None:
        """Keep a ring for the next transfer, or destroy it after a failure (a buffer of it may
        be mid-map)."""
        runner, memory = self.runner, self.runner.memory
        with runner.lock:
            self._out[write] -= 1
            self.back.notify()
            if ok and runner.usable:
                memory.rings.setdefault(write, []).append(ring)
                return
            for buffer, _ in ring:
                memory.destroy(buffer)


class Transfers:
    """The paths bytes take between the host and one runner's GPU buffers."""

    def __init__(self, runner: "Runner", cores: int):
        self.runner: Runner = cast("Runner", weakref.proxy(runner))  # (weak: see Memory.__init__)
        # Sizes that choose a path (module defaults; the tests shrink them to reach every path)
        self.ring_chunk, self.ring_depth, self.stream_above = RING_CHUNK, RING_DEPTH, STREAM_ABOVE
        self.queue_write_max = QUEUE_WRITE_MAX
        self.copies = HostCopies(cores)
        self._read_maps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # readable buffer -> its map
        self.rings = Rings(runner)
        self.flow = Flow(runner)

    def close(self) -> None:
        """End the copy threads, and wake transfers waiting for a ring (they find the device
        closed). Under the runner's lock."""
        self.rings.back.notify_all()
        self.copies.close()

    # ------------------------------------------------------------------ writes

    def write(self, buffer, data, offset: int = 0) -> None:
        """Write bytes into a buffer at ``offset``, padding the tail to 4 bytes.

        Small writes go through the queue (wgpu copies them into staging of its own and into
        ``buffer`` at the next submit, ahead of that submit's work), so work recorded before
        is submitted first: the write lands after it. Queued bytes count towards the early
        submit like the bytes of recorded passes, which bounds the staging wgpu holds.
        Mid-sized writes (``_write_staged``) are copied into reused mapped staging; large
        writes stream through the staging ring (``upload``).
        """
        raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        if raw.nbytes > self.stream_above:
            self.upload(buffer, raw, offset)
            return
        if raw.nbytes > self.queue_write_max:
            self._write_staged(buffer, raw, offset)
            return
        if raw.nbytes % 4:
            padded = np.zeros(word_size(raw.nbytes), np.uint8)
            padded[:raw.nbytes] = raw
            raw = padded
        runner = self.runner
        with runner.lock:
            runner.check()
            runner.submit_pending(writes=False)
            try:
                runner.path.write_buffer(buffer, offset, raw)
            except wgpu.GPUError as err:
                raise runner.gpu_error(err) from None
            runner.queued_write(raw.nbytes)

    def _write_staged(self, buffer, raw: np.ndarray, offset: int) -> None:
        """``write`` through a reused staging buffer that is already mapped: the bytes are
        copied in, and the GPU's copy out of it is recorded like any other work (in order
        with it, submitted with the next read); it is mapped again after that submit."""
        runner, memory = self.runner, self.runner.memory
        size = word_size(raw.nbytes)
        kept_size = 1 << (size - 1).bit_length()  # size classes: few pools, at most 2x
        with runner.lock:
            runner.check()
            m = memory.writes.take(kept_size) or runner.path.new_map(
                memory.create(kept_size, MAP_WRITE, mapped=True), kept_size, done=True)
        with DroppedOnFailure(runner, m.buffer):
            runner.path.fill(m, raw)  # (once mapped again: the GPU has copied out of it)
            with runner.lock:
                runner.check()
                runner.record_copy((m.buffer, 0, buffer, offset, size), remap=m)

    def remapped(self, staged: list) -> None:
        """Map the write staging buffers of ``staged`` maps again, after the submit that copies
        out of them: ready for the next write once the GPU has copied out."""
        runner, memory = self.runner, self.runner.memory
        for m in staged:
            again = runner.path.new_map(m.buffer, m.size)
            runner.path.start_map(again, write=True)
            for old in memory.writes.put(again):  # destroying one cancels its map
                memory.destroy(old.buffer)

    # ------------------------------------------------------------------ large transfers

    def upload(self, buffer, source: np.ndarray | Rows, offset: int = 0,
               on_chunk: Callable[[int], Any] | None = None) -> None:
        """Stream ``source`` into ``buffer`` (see ``_upload``), Ctrl-C held back meanwhile."""
        with interrupts_held():
            self._upload(buffer, source, offset, on_chunk)

    def _upload(self, buffer, source: np.ndarray | Rows, offset: int = 0,
                on_chunk: Callable[[int], Any] | None = None) -> None:
        """Stream ``source`` into ``buffer`` at ``offset`` through a MAP_WRITE ring: bytes (a
        uint8 array), or a view's elements gathered row by row (``Rows``: ``layout.Gather``), so that
        its gaps never cross the bus.

        The host fills one staging buffer (on several threads, outside the lock) while the GPU
        copies the ones before it. After each chunk's copy is submitted, ``on_chunk(bytes so
        far)`` is called under the lock, so that the caller can record work that reads what
        has arrived: it runs on the GPU while the next chunk is filled.
        """
        runner, path, flow = self.runner, self.runner.path, self.flow
        began = time.perf_counter()
        ring = self.rings.take(True, self.ring_chunk, self.ring_depth)
        flow.uploading()
        self.copies.start()
        whole = chunk = ring[0][0].size  # what a staging buffer holds, and what it is filled with
        if not isinstance(source, np.ndarray):
            if source.row_bytes > chunk:  # rows longer than a chunk: packed on the host first
                source = np.ascontiguousarray(source.x).reshape(-1).view(np.uint8)
            else:
                chunk -= chunk % source.row_bytes  # whole rows a chunk
        ok = False
        try:
            for i, start in enumerate(range(0, source.nbytes, chunk)):
                entry = ring[i % len(ring)]
                size = self._fill(entry, whole, source, start, min(chunk, source.nbytes - start))
                with runner.lock:
                    runner.check()
                    path.unmap(entry[1])
                    entry[1] = None
                    copy = (entry[0], 0, buffer, offset + start, word_size(size))
                    runner.submit([runner.encode((), copies=[copy])], uses=(buffer,))
                    entry[1] = path.new_map(entry[0], whole)
                    path.start_map(entry[1], write=True)
                    if on_chunk is not None:
                        on_chunk(start + size)
            ok = True
        except wgpu.GPUError as err:
            raise runner.gpu_error(err) from None
        finally:
            self.rings.give(True, ring, ok)
            flow.uploaded(source.nbytes if ok else 0, began)

    def _fill(self, entry: list, whole: int, source: np.ndarray | Rows, start: int, size: int) -> int:
        """Fill the ring's staging buffer ``entry`` ([buffer, pending map]; ``whole`` bytes)
        with ``size`` bytes of ``source`` from ``start`` once it is ready (``Rings.ready``), and
        count it (``Flow``); ``size``."""
        path = self.runner.path
        waited = time.perf_counter()
        self.rings.ready(entry, whole)
        filling = time.perf_counter()
        beside = self.flow.beside_now()  # (another thread's result still on its way: this chunk travels beside it)
        view = path.mapped(entry[1])
        if not isinstance(source, np.ndarray):
            self.copies.gather(view[:size], source, start // source.row_bytes, size // source.row_bytes)
        else:
            self.copies.copy(view[:size], source[start:start + size], write=True)
        del view
        self.flow.staged_one(waited, filling, beside)
        return size

    # ------------------------------------------------------------------ reads

    def read_into(self, buffer, out: np.ndarray, offset: int = 0) -> np.ndarray:
        """Copy ``out.nbytes`` bytes of ``buffer`` from ``offset`` into the uint8 array ``out``,
        after all recorded work: small reads through one staging buffer (one submit, one map),
        or the buffer itself where it is readable; large ones streamed through the MAP_READ
        ring. Ctrl-C is held back meanwhile. A thread admitted for a small call (``Admission``)
        leaves when its read ends, read or failed."""
        try:
            with interrupts_held():
                nbytes = out.nbytes
                if nbytes > self.stream_above:
                    return self._read_streamed(buffer, out, offset)
                if buffer.usage == READABLE and offset == 0 and nbytes <= buffer.size:
                    return self._read_in_place(buffer, out)
                return self._read_staged(buffer, out, offset)
        finally:
            self.runner.admission.leave()

    def _read_staged(self, buffer, out: np.ndarray, offset: int) -> np.ndarray:
        """A small read through a MAP_READ staging buffer: its copy recorded after the work
        pending, one submit (on the native path with other threads' calls), map, wait, copy out."""
        runner, memory = self.runner, self.runner.memory
        nbytes = out.nbytes
        size = max(4, word_size(nbytes))
        path = runner.path
        with runner.lock:
            runner.check()
            m = memory.staging.take(size) or path.new_map(memory.create(size, MAP_READ), size)
            if not isinstance(path, NativePath):
                try:
                    ticket = runner.submit(read=(buffer, offset, m))
                except BaseException:
                    memory.destroy(m.buffer)
                    raise
        if isinstance(path, NativePath):  # committed with other threads' calls (Commits.commit)
            call, ticket = path.read_call(m, buffer, offset)
            try:
                runner.commits.commit(call)
            except BaseException:
                with runner.lock:
                    memory.destroy(m.buffer)
                raise
        self._finish_read(m, ticket, out)
        return out

    def _read_in_place(self, buffer, out: np.ndarray) -> np.ndarray:
        """Read a buffer that passes wrote in mappable memory (``Memory.storage(readable=True)``)
        through a map of its own: no copy into staging. Its map is started at once where the
        work that wrote it is submitted (``Runner.settled``: a small call submits its own), else
        by the submission of that work (a batch of committed calls, ``Commits.commit``). From
        the map's start to the unmap the buffer is in ``runner.mapped``, so that no other submit
        uses it meanwhile (wgpu-native aborts the process on one; such a submit waits, others go
        ahead), and another read of it waits its turn (``runner.reading`` until then); the wait
        itself holds no lock. A dispatch writing straight into mapped memory shortens a round
        trip (benchmarks/LOG.md, "The settings' measurements": reads in place)."""
        runner, n = self.runner, self.runner.path
        assert isinstance(n, NativePath)  # (a readable buffer needs in_place, which needs it)
        with runner.lock:
            runner.check()
            if buffer in runner.mapped or buffer in runner.reading:  # another thread reads it now
                runner.wait_until(lambda: buffer not in runner.mapped and buffer not in runner.reading)
            m = self._read_maps.get(buffer)
            if m is None:  # (it holds the handle, not the buffer, which may go with its tensor)
                m = self._read_maps[buffer] = n.new_map(Handle(buffer._internal), buffer.size)
            call, ticket = m.call or n.read_call(m, buffer, 0)  # (made once: it reads the buffer itself)
            direct = runner.settled()  # (a small call's work, submitted by the call: ``Runner.dispatch``)
            if direct:
                call.ticket = n.submitted  # (the last submission, which wrote the buffer or came after)
                if not n.submitted:  # (none: a buffer no work wrote)
                    ticket = None
                n.start_read_map(m)
                runner.mapped.add(buffer)
            else:
                call.ticket = 0  # set by the submit, which starts the map (wgpu counts from 1)
            runner.reading.add(buffer)
        try:
            if not direct:
                runner.commits.commit(call, reads=buffer)  # (in runner.mapped from its submission on)
            n.read(m, ticket, out)
        except BaseException as err:
            # Once its map is started, the buffer (its tensor's) may be mid-map or mapped: it
            # can be neither destroyed nor used again, so the device is taken as lost.
            with runner.lock:
                if direct or call.ticket != 0:
                    self._read_maps.pop(buffer, None)
                    runner.lose(f"a read failed with its buffer mapped: {err!r}")
            raise
        finally:
            runner.unmapped(buffer)
        return out

    def _finish_read(self, m, ticket, out: np.ndarray) -> None:
        """Wait for map ``m`` (outside the lock), copy its first ``out.nbytes`` bytes out,
        unmap, and keep the staging buffer for the next read. A failure on the way drops the
        buffer: it may still be mid-map."""
        runner, memory = self.runner, self.runner.memory
        with self.flow.awaiting(m), DroppedOnFailure(runner, m.buffer):
            runner.path.read(m, ticket, out, nap=True)
        with runner.lock:
            for old in memory.staging.put(m) if runner.usable else [m]:
                memory.destroy(old.buffer)

    def _read_streamed(self, buffer, out: np.ndarray, offset: int) -> np.ndarray:
        """Large reads: the host copies chunk i out while the GPU copies the chunks after it."""
        runner, path = self.runner, self.runner.path
        ring = self.rings.take(False, self.ring_chunk, self.ring_depth)
        self.copies.start()
        chunk = ring[0][0].size
        starts = list(range(0, out.nbytes, chunk))
        tickets: dict[int, object] = {}
        ok = False

        def start(i: int) -> None:
            entry = ring[i % len(ring)]
            size = min(chunk, out.nbytes - starts[i])
            with runner.lock:
                runner.check()
                entry[1] = path.new_map(entry[0], word_size(size))
                tickets[i] = runner.submit(read=(buffer, offset + starts[i], entry[1]))

        try:
            for i in range(min(len(ring), len(starts))):
                start(i)
            for i, first in enumerate(starts):
                entry = ring[i % len(ring)]
                m = entry[1]
                with self.flow.awaiting(m):
                    path.wait(m, tickets.pop(i), nap=True)
                view = path.mapped(m)
                size = min(chunk, out.nbytes - first)
                self.copies.copy(out[first:first + size], view[:size], write=False)
                del view
                path.unmap(m)
                entry[1] = None
                if i + len(ring) < len(starts):
                    start(i + len(ring))
            ok = True
        except wgpu.GPUError as err:
            raise runner.gpu_error(err) from None
        finally:
            self.rings.give(False, ring, ok)
        return out

    def read(self, buffer, nbytes: int) -> bytes:
        """The first ``nbytes`` of a buffer, after all recorded work."""
        return self.read_into(buffer, np.empty(nbytes, np.uint8)).tobytes()
