"""The public backend: recording, submitting and mapping through wgpu-py's public objects.

Owns ``PublicPath`` (what the runner drives) and its encoder and map objects.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import wgpu


class PublicMap:
    """One map of a staging buffer on the public path: started under the runner's lock,
    waited for outside it."""

    __slots__ = ("buffer", "size", "done", "promise")

    def __init__(self, buffer, size: int, done: bool = False):
        self.buffer, self.size, self.done = buffer, size, done
        self.promise: Any = None  # wgpu-py's GPUPromise of the map in flight


class PublicPath:
    """Recording, submitting and mapping through wgpu-py's public objects."""

    name = "public"

    def __init__(self, device):
        self.device = device

    def new_map(self, buffer, size: int, done: bool = False) -> PublicMap:
        return PublicMap(buffer, size, done)

    def encoder(self):
        return PublicEncoder(self.device)

    def submit(self, encoders: list, read=None):
        """Finish the encoders and submit them; ``read`` = (src, offset, map of a MAP_READ
        staging buffer): a copy of ``map.size`` bytes into it is recorded last and its map
        started after the submit. Returns the ticket ``wait`` takes."""
        if read is not None:
            src, offset, m = read
            if not encoders:
                encoders = [self.encoder()]
            encoders[-1].copy(src, offset, m.buffer, 0, m.size)
        buffers = []
        try:
            for encoder in encoders:
                buffers.append(encoder.finish())
        finally:
            for encoder in encoders:
                encoder.drop()
        self.device.queue.submit(buffers)
        if read is not None:
            self.start_map(read[2], write=False)
        return None

    def start_map(self, m: PublicMap, write: bool) -> None:
        m.done = False  # a staging buffer's map object is used again for its next map
        m.promise = m.buffer.map_async(wgpu.MapMode.WRITE if write else wgpu.MapMode.READ, 0, m.size)

    def wait(self, m: PublicMap, ticket, nap: bool = False) -> None:
        """(wgpu-py's poll thread lands the maps: ``nap`` is the native path's.)"""
        if not m.done:
            m.promise.sync_wait()
            m.done = True

    def pending(self, m: PublicMap) -> bool:
        """Started and not yet waited for (wgpu-py's poll thread may have landed it meanwhile:
        this path cannot tell without waiting)."""
        return m.promise is not None and not m.done

    def write_buffer(self, buffer, offset: int, raw: np.ndarray) -> None:
        self.device.queue.write_buffer(buffer, offset, raw)

    def mapped(self, m: PublicMap) -> np.ndarray:
        """The mapped bytes as a writable uint8 array, valid until ``unmap``."""
        return np.frombuffer(m.buffer._experimental_get_mapped_range(0, m.size), np.uint8)

    def unmap(self, m: PublicMap) -> None:
        m.buffer.unmap()

    def fill(self, m: PublicMap, raw: np.ndarray) -> None:
        """Wait for the map, copy ``raw`` into the mapped buffer (zeros after it), and unmap it."""
        self.wait(m, None)
        view = self.mapped(m)
        view[:raw.nbytes] = raw
        view[raw.nbytes:] = 0
        del view
        self.unmap(m)

    def read(self, m: PublicMap, ticket, out: np.ndarray, nap: bool = False) -> None:
        """Wait for the map, copy the first ``out.nbytes`` bytes of the mapped buffer into
        ``out``, and unmap it."""
        self.wait(m, ticket)
        view = self.mapped(m)
        out[...] = view[:out.nbytes]
        del view
        self.unmap(m)


class PublicEncoder:
    def __init__(self, device):
        self.enc = device.create_command_encoder()

    def dispatch(self, pipeline, bind_group, grid, writes=None) -> None:
        compute = self.enc.begin_compute_pass(timestamp_writes=writes)
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(*grid)
        compute.end()

    def record(self, clear, steps) -> None:
        """``clear`` zeroed, then the steps (pipeline, bind group, grid)."""
        for buffer in clear or ():
            self.clear(buffer)
        for pipeline, bind_group, grid in steps:
            self.dispatch(pipeline, bind_group, grid)

    def stamp(self, queries, index: int) -> None:
        """An empty pass that writes timestamp ``index`` when it begins."""
        self.enc.begin_compute_pass(
            timestamp_writes={"query_set": queries, "beginning_of_pass_write_index": index}).end()

    def clear(self, buffer) -> None:
        self.enc.clear_buffer(buffer)

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        self.enc.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

    def resolve(self, queries, count: int, dst) -> None:
        self.enc.resolve_query_set(queries, 0, count, dst, 0)

    def finish(self):
        return self.enc.finish()

    def drop(self) -> None:
        self.enc = None
