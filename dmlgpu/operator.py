"""``CompiledOperator``: an operator descriptor compiled for one device, and how it runs.

Owns the operator's program (its schedule's passes compiled, bound to buffers once per pair
of buffer sets), resident calls (``run``), NumPy calls (small ones through a kit of their own,
large ones streamed piece by piece as they cross the bus), and DirectML's binding model on
the caller's buffers and encoder (``binding_properties``, ``binding_table``, ``record``:
``binding.py``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from . import layout, wgsl
from .binding import BindingProperties, BindingTable, bases, check_apart, clears, named
from .caches import LruCache
from .desc import TensorDesc, lower
from .errors import DataError
from .pieces import Schedule, buffer_spans, schedule, tensor_needs
from .plan import Plan, Tuning, Writes
from .runtime import IN_PLACE_OUTPUT_MAX, Kit, Runner, Steps, check_encoder, clear_now, interrupts_held, record
from .tensor import Tensor, check_layout
from .types import NanMode

if TYPE_CHECKING:
    from .device import Device

#: NumPy inputs larger than this many staging chunks are reduced piece by piece while the
#: next piece is still crossing the bus (``pieces.schedule`` with one chunk per binding).
STREAM_PIECES_ABOVE_CHUNKS = 2
#: NumPy inputs up to this size run through a kit of the operator's own (``CompiledOperator._small``):
#: each thread making such calls at once keeps one, with a copy of the input on the GPU.
HOT_CALL_MAX = 4 << 20
#: Sets of buffers an operator keeps its passes bound to (``Program.steps``).
BOUND_KEPT = 64


class Program:
    """An operator's schedule on given capabilities, its passes compiled: what binds where."""

    def __init__(self, runner: Runner, sched: Schedule, own_scratch: bool = True):
        """``own_scratch``: keep a scratch buffer for the pairs between passes and pieces here,
        which its callers bind unless they bind one of theirs (``bound``'s ``temporary``); a
        program whose calls each bring their own (``CompiledOperator._streamed``) keeps none."""
        self.runner, self.schedule = runner, sched
        self.sources: list[str] = []
        # per piece: its window of the input and output (None: the scratch), and its passes
        self.pieces = [(piece.input, piece.output, self._passes(piece.plan)) for piece in sched.pieces]
        scratch = self.scratch_bytes = sched.scratch_bytes
        self.scratch = runner.memory.storage(scratch) if scratch and own_scratch else None
        # Words a racing plan's first pass keeps between dispatches (zeroed here, since a
        # pooled buffer holds what it held; each dispatch leaves them zero): binding 3.
        race = max(p.plan.race_bytes for p in sched.pieces)
        self.race = runner.memory.storage(race) if race else None
        if self.race is not None:
            runner.transfers.write(self.race, np.zeros(race, np.uint8))
        # by the buffers bound: their tensors' buffers and ranges, or a binding table's bases.
        # Room for many: threads making resident calls at once each bind an output buffer of
        # the pool's, which hands out as many as calls are in flight, and a miss makes a bind
        # group for the call (benchmarks/LOG.md, "The settings' measurements": BOUND_KEPT).
        self._steps = LruCache(BOUND_KEPT)

    def _passes(self, p: Plan) -> list:
        """(pipeline, WGSL, parameters, grid, reads partial pairs, what it writes) per pass."""
        programs = self.runner.programs
        passes = wgsl.passes(p)
        self.sources += [s.source for s in passes]
        return [(programs.pipeline(s.source), s.source, programs.uniform(s.params), s.grid, s.merging, s.writes)
                for s in passes]

    def steps(self, input: Tensor, output: Tensor) -> list:
        """Per piece, its passes bound to its windows of the input and output (and the scratch
        pairs between a first pass and its merge): a list of step lists, made once per pair
        of buffer sets (a buffer object is never reused for other memory, so a cached bind
        group never points at a stranger's buffer)."""
        return self._tensors_bound(input, output)[0]

    def flat_steps(self, input: Tensor, output: Tensor) -> Steps:
        """Every piece's steps in one list, made once like ``steps`` (a ``Steps`` list keeps the
        C form the native path records from)."""
        return self._tensors_bound(input, output)[1]

    def _tensors_bound(self, input: Tensor, output: Tensor) -> tuple:
        key = (tuple(input._buffers), input._where, tuple(output._buffers), output._where)
        bound = self._steps.get(key)
        if bound is None:
            bound = self.bound(_tensor_bases(input), _tensor_bases(output), key=key)
        return bound

    def bound(self, inputs: tuple, outputs: tuple, temporary: tuple | None = None, key=None) -> tuple:
        """(steps by piece, ``Steps``) of the passes bound to windows of ``inputs`` and
        ``outputs`` ((buffer, offset, end) a buffer: ``binding.bases``) and, between a first
        pass and its merge, the window ``temporary`` ((buffer, offset, size); None: our
        scratch); made once per ``key`` (default: all of these)."""
        key = (inputs, outputs, temporary) if key is None else key
        bound = self._steps.get(key)
        if bound is None:
            by_piece = self._bind(inputs, outputs, temporary)
            flat = Steps(s for piece in by_piece for s in piece)
            flat.buffers = frozenset(b[0] for b in inputs + outputs)  # what a submit checks against mapped buffers
            bound = self._steps[key] = (by_piece, flat)
        return bound

    def _bind(self, inputs: tuple, outputs: tuple, temporary: tuple | None) -> list:
        programs = self.runner.programs
        scratch = temporary or ((self.scratch, 0, self.scratch.size) if self.scratch else None)

        def window(bases: tuple, w):
            if w is None:
                return scratch
            buffer, base, end = bases[w.buffer]
            start = base + w.offset
            return buffer, start, min(w.size, end - start)

        by_piece = []
        for in_window, out_window, passes in self.pieces:
            src, dst = window(inputs, in_window), window(outputs, out_window)
            steps = []
            for pipeline, source, params, grid, merging, writes in passes:
                read, written = scratch if merging else src, scratch if writes is Writes.PAIRS else dst
                # one buffer read and written (programs.py says how)
                shared = read is not None and written is not None and read[0] is written[0]
                if shared:
                    pipeline = programs.pipeline(wgsl.writable_input(source), shared=True)
                race = self.race if writes is Writes.RACE else None
                steps.append((pipeline, programs.bind(params, read, written, race, shared), grid))
            by_piece.append(steps)
        return by_piece

    def release(self) -> None:
        for kept in ("scratch", "race"):
            if getattr(self, kept) is not None:
                self.runner.memory.free(getattr(self, kept))
                setattr(self, kept, None)


def _tensor_bases(tensor: Tensor) -> tuple:
    """(buffer, offset, end) of each of a tensor's buffers, as ``binding.bases`` gives them."""
    if tensor._where is None:
        return tuple((buffer, 0, buffer.size) for buffer in tensor._buffers)
    return bases(tensor._bindings())


class CompiledOperator:
    """An operator descriptor compiled for one device: reusable, with its plan and pipelines."""

    def __init__(self, device: "Device", desc, nan_mode, tuning: Tuning | None = None):
        desc.check_feature_level(device.feature_level)
        self.device = device
        self.desc = desc
        self.nan_mode = NanMode.parse(nan_mode, "nan_mode")
        self._reduction = lower(desc)
        self.input_desc: TensorDesc = self._reduction.input
        self.output_desc: TensorDesc = self._reduction.output
        runner = device.runner
        #: What this operator was planned with: ``tuning``, else the device's for its family.
        self.tuning = tuning if tuning is not None else device.tuning_for(self._reduction, self.nan_mode)
        self._program = Program(runner, schedule(self._reduction, runner.capabilities, self.nan_mode, self.tuning))
        self.schedule: Schedule = self._program.schedule
        self.plan: Plan = self.schedule.pieces[0].plan  # the first piece's (the only one, mostly)
        # What each resident call asks for, found once: whether it clears its output first,
        # the bytes it reads, the output's buffer spans.
        self._clears = self.plan.clears_output
        self._reads = self.input_desc.total_tensor_size_in_bytes
        self.input_spans = buffer_spans(self.input_desc, runner.capabilities)
        self.output_spans = buffer_spans(self.output_desc, runner.capabilities)
        # a small output written with plain stores goes in mappable memory, read with no copy
        # (IN_PLACE_OUTPUT_MAX)
        self._output_in_place = runner.in_place and self.plan.op != "hardmax" and len(self.output_spans) == 1 \
            and self.output_spans[0][1] <= IN_PLACE_OUTPUT_MAX
        self.sources: list[str] = self._program.sources
        self._streamed_program: Program | None = None
        self._own_layouts = LruCache(16)  # array layouts checked to be the input descriptor's
        # Kits of small NumPy calls (``_small``), one taken by each thread while it runs one;
        # False once known to have none.
        self._kits: list = []
        self._hot: bool | None = None
        # The last input descriptor ``run`` found laid out as ``input_desc`` (``check_layout``,
        # whose answer depends on the descriptor alone: a tensor of a descriptor holds its bytes):
        # a loop of calls on one tensor checks it once.
        self._input_laid_out: TensorDesc | None = None

    def _clear(self, output: Tensor):
        return output._buffers if self._clears else None

    @property
    def binding_properties(self) -> BindingProperties:
        """DirectML's ``GetBindingProperties``: the least bytes of the temporary resource a
        recorded dispatch needs bound (the scratch of a split's partial pairs; 0 where it has
        none) and of the persistent resource (0). Input and output bindings need their tensors'
        ``total_tensor_size_in_bytes`` and no more."""
        return BindingProperties(self._program.scratch_bytes, 0)

    def binding_table(self, input=None, output=None, temporary=None, persistent=None) -> BindingTable:
        """A ``BindingTable`` for this operator (DirectML's ``CreateBindingTable``), with what is
        given bound: each a ``BufferBinding``, a ``wgpu.GPUBuffer`` (all of it) or a ``Tensor``.
        Each binding is checked as it is bound, and with both input and output given the table
        is validated as a whole at once (``BindingTable.validate``)."""
        table = BindingTable(self)
        table.bind_inputs(input)
        table.bind_outputs(output)
        table.bind_temporary_resource(temporary)
        table.bind_persistent_resource(persistent)
        if input is not None and output is not None:
            table.validate()
        return table

    def record(self, encoder, table: BindingTable) -> None:
        """Record this operator's dispatch on the table's buffers into the caller's
        ``wgpu.GPUCommandEncoder`` (DirectML's ``IDMLCommandRecorder::RecordDispatch``): its
        passes (a compute pass each) and, for HARDMAX, a ``clear_buffer`` of the output's bytes
        first. Nothing is submitted: the results are in the output buffer once the caller's
        submit of the encoder has completed; passes the caller records before and after run
        in order with them. The table is validated first, so a bad one records nothing.
        Work dmlgpu itself recorded on the device and has not submitted (``run``, writes) is
        submitted now, so that it runs before the encoder. Bind groups over the table's
        buffers are made on the first record and kept (by buffer, offset and size)."""
        if not isinstance(table, BindingTable):
            raise TypeError(f"table must be a dmlgpu.BindingTable (op.binding_table(...)), not {type(table).__name__}")
        if table.operator is not self:
            raise DataError("table was made for another operator; make one with this operator's binding_table()")
        runner = self.device.runner
        runner.check()
        check_encoder(encoder, runner.device)
        inputs, outputs, temporary, output_clears = table.validate()
        steps = self._program.bound(inputs, outputs, temporary)[1]
        runner.flush()
        record(encoder, output_clears if self._clears else (), steps)

    def export(self, limits=None) -> str:
        """This operator as a standalone WebGPU program for a web page (``dmlgpu.export``): an
        ES module with its WGSL, its plan as data and a small runner, planned with the tuning
        this operator was planned with, for a browser's ``limits`` (WebGPU's names; WebGPU's
        defaults where not given), not for this device's adapter."""
        from .exporter import export

        return export(self.desc, limits=limits, nan_mode=self.nan_mode, tuning=self.tuning)

    def _check_wrapped(self, input: Tensor, output: Tensor) -> None:
        """Input and output, one of them over the caller's buffers (``Device.wrap``), must lie
        apart, as a binding table checks them."""
        ins, outs = input._bindings(), output._bindings()
        check_apart(named("input", ins, tensor_needs(self.input_desc, self.input_spans))
                    + named("output", outs, tensor_needs(self.output_desc, self.output_spans)))

    def run(self, input: Tensor, output: Tensor | None = None) -> Tensor:
        """Dispatch on GPU-resident tensors; returns the output tensor (new if not given)."""
        if type(input) is not Tensor or input.desc is not self._input_laid_out or not input._buffers:
            check_layout(input, self.input_desc, "input")
            self._input_laid_out = input.desc
        if input.device is not self.device:
            raise DataError(f"input is on {input.device!r}, but the operator was compiled for {self.device!r}")
        small = output is None and self._output_in_place  # (a small call, its output read in place)
        if output is None:
            output = self.device.empty(self.output_desc, self.output_spans, readable=self._output_in_place)
        else:
            check_layout(output, self.output_desc, "output")
        clear = self._clear(output)
        if input._where is not None or output._where is not None:
            self._check_wrapped(input, output)
            if clear and output._where is not None:  # only the tensor's bytes of the caller's buffer
                clear_now(self.device.runner, clears(output._bindings(), tensor_needs(self.output_desc, self.output_spans)))
                clear = None
        steps = self._program.flat_steps(input, output)
        admission = self.device.runner.admission
        if small:  # one such call at a time on the device, from here to its read-back (Admission)
            admission.enter()
        try:
            self.device.runner.dispatch(steps, clear=clear, reads=self._reads, now=small)
        except BaseException:
            if small:
                admission.leave()
            raise
        return output

    def passes(self, input: Tensor, output: Tensor) -> tuple[Steps, list | None]:
        """The passes of one run on these tensors, bound to them (pipeline, bind group, grid
        each), and the buffers zeroed before them (None: none): what the benchmark times."""
        check_layout(input, self.input_desc, "input")
        check_layout(output, self.output_desc, "output")
        return self._program.flat_steps(input, output), self._clear(output)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """NumPy in, NumPy out: the logical array ``x`` is laid out in the input descriptor's
        strides. Small calls reuse GPU buffers of a pool (one set per thread at a time) and
        share one submit between upload, passes and read-back; large inputs stream through
        the staging ring, reduced piece by piece as they arrive."""
        data = self._bytes_of(x)
        with interrupts_held():
            if data.nbytes > STREAM_PIECES_ABOVE_CHUNKS * self.device.runner.transfers.ring_chunk:
                return self._streamed(data)
            return self._small(data)

    def _bytes_of(self, x) -> np.ndarray | layout.Gather:
        """``layout.bytes_for``, its checks made once per array layout (dtype, shape, strides):
        an array already laid out as the input descriptor says is passed as it is, and a view
        with wide gaps, for a packed input, as its elements gathered (``layout.gather``)."""
        key = (x.dtype.str, x.shape, x.strides) if isinstance(x, np.ndarray) else None
        how = self._own_layouts.get(key) if key is not None else None
        if how == "own":
            return layout.span(x)
        if how == "gather" or (how is None and self.input_desc.strides is None):
            gathered = layout.gather(x)
            if gathered is not None:
                layout.check_logical(self.input_desc, x)
                self._own_layouts[key] = "gather"
                return gathered
        data = layout.bytes_for(self.input_desc, x)
        as_is = key is not None and x.dtype.isnative and all(s >= 0 and s % x.itemsize == 0 for s in x.strides)
        if as_is and layout.describe(x)[0].element_strides == self.input_desc.element_strides:
            self._own_layouts[key] = "own"  # describe passed x's own memory, not a copy
        return data

    def _small(self, data: np.ndarray | layout.Gather) -> np.ndarray:
        """Upload, passes and read-back in one submit: on the native path through a kit of
        this operator's (``runtime.kits.Kit``: buffers, staging and bind groups made once,
        the call one sequence in C), else on buffers from the runner's pool (the same ones
        again on the next call, so that their bind groups are found cached)."""
        if data.nbytes <= HOT_CALL_MAX and self._hot is not False and isinstance(data, np.ndarray):
            try:
                kit = self._kits.pop()
            except IndexError:
                kit = self._new_kit()
            if kit is not None:
                out = np.empty(self.output_desc.sizes, self.output_desc.data_type.numpy)
                kit.run(data, out.reshape(-1).view(np.uint8))
                self._kits.append(kit)  # not given back after a failure: dropped with it
                return out
        source, result = self.device.empty(self.input_desc), None
        try:
            result = self.device.empty(self.output_desc)
            source.write(data)
            self.run(source, result)
            return result.numpy()
        finally:
            source.release()
            if result is not None:
                result.release()

    def _new_kit(self):
        """A kit for ``_small``'s hot call (``Kit.make``, which makes its buffers and
        has the passes bound to them here), or None where there is none (the public path, an
        output that is not one packed buffer, an input in several buffers)."""
        single = len(self.input_spans) == len(self.output_spans) == 1
        kit = None
        if self.output_desc.strides is None and single:
            def bind(input_buffer, output_buffer) -> Steps:
                return self._program.flat_steps(Tensor(self.device, self.input_desc, [input_buffer]),
                                                Tensor(self.device, self.output_desc, [output_buffer]))

            kit = Kit.make(self.device.runner, bind, self._reads, self.output_desc.total_tensor_size_in_bytes,
                           self._clears, self._output_in_place)
        if kit is None:
            self._hot = False
        return kit

    def _streamed(self, data: np.ndarray | layout.Gather) -> np.ndarray:
        """Upload through the staging ring, recording each piece as soon as the bytes it reads
        have been submitted, so that the GPU reduces one piece while the next is filled.

        The pairs a piece leaves for a later one go into scratch of this call's own: calls
        from several threads stream through the same program at once, their pieces recorded
        in turn on one queue, and a scratch of the program's would take one call's pairs over
        another's (wrong answers from two threads, before issue 49)."""
        program = self._streamed_program
        runner = self.device.runner
        if program is None:
            caps = runner.capabilities
            caps = dataclasses.replace(caps, max_storage_binding=min(runner.transfers.ring_chunk, caps.max_storage_binding))
            program = self._streamed_program = Program(
                runner, schedule(self._reduction, caps, self.nan_mode, self.tuning), own_scratch=False)
        source, result = self.device.empty(self.input_desc), self.device.empty(self.output_desc)
        scratch = runner.memory.storage(program.scratch_bytes) if program.scratch_bytes else None
        try:
            temporary = None if scratch is None else (scratch, 0, scratch.size)
            by_piece = program.bound(_tensor_bases(source), _tensor_bases(result), temporary)[0]
            pieces = list(zip(program.schedule.pieces, by_piece))
            if self.plan.clears_output:
                runner.dispatch([], clear=result._buffers)
            # bytes of each buffer's part of the data: a window may end past them (16-byte rounding)
            lengths = [max(0, min(nbytes, data.nbytes - first)) for first, nbytes in source._spans]
            next_piece = 0

            def arrived(buffer: int, done: int) -> None:
                """Record the pieces, in order, whose input bytes have all been submitted."""
                nonlocal next_piece
                while next_piece < len(pieces):
                    piece, steps = pieces[next_piece]
                    w = piece.input
                    if w is not None and (w.buffer > buffer or
                                          (w.buffer == buffer and min(w.offset + w.size, lengths[w.buffer]) > done)):
                        return
                    runner.dispatch(steps, reads=0 if w is None else w.size)
                    next_piece += 1

            source.write(data, on_chunk=arrived)
            arrived(len(lengths), 0)
            return result.numpy()
        finally:
            source.release()
            result.release()
            if scratch is not None:  # (work recorded that uses it still runs: Memory.free)
                runner.memory.free(scratch)
