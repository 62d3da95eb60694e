"""One chunk's output over its whole life (:class:`ChunkOutput`): the buffers the kernel writes, what the
finished Arrow array holds on to, and what queued GPU work reads until the output's sync event fires."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _capsules
from ...gpu import memory as device_memory, runtime
from ...core.types import DataType
from . import string_results as results
from .string_sink import StringSink
from .buffers import Memory
from .plan import Plan
from ..spec import Kind, NullMode

__all__ = ["ChunkOutput"]


class ChunkOutput:
    """The output of one chunk, from allocation to the Arrow array that owns it.

    ``keep``: what the finished array holds on to (released with the array). ``scratch``: what the queued
    kernel and copies read that is not arrowdev's to free in stream order, the inputs (released when the
    output's sync event fires, on a GPU). Buffers of arrowdev's pool the queued work reads (the string
    arena, the kernel's raw values and flags) are dropped once :meth:`finish` has queued everything: the
    pool is stream-ordered, so their blocks go only to work queued after this output's. The kernel writes
    ``values`` (numbers, bytes of bools, ballot words, string pairs or views) and, where it decides row
    validity itself, ``flags`` (one byte per row). :meth:`assemble_values` turns what the kernel wrote into
    Arrow buffers; the validity is set by :mod:`.validity`; :meth:`finish` builds the array.
    """

    def __init__(self, mem: Memory, plan: Plan, n: int, pad: int, rows: int) -> None:
        self.mem, self.plan, self.n, self.pad, self.rows = mem, plan, n, pad, rows
        self.keep: list[Any] = []
        self.scratch: list[Any] = []
        spec = plan.spec
        self.sink: StringSink | None = None
        if spec.out == Kind.BALLOT:
            self.values, self.values_ptr, self.values_keep = mem.new((n + 31) // 32, np.uint32)
        elif plan.string_out is None:
            if plan.out_np is None:  # bytes of bools, packed into bits by assemble_values
                self.values, self.values_ptr, self.values_keep = mem.scratch(pad + n, np.uint8)
            else:
                self.values, self.values_ptr, self.values_keep = mem.new(pad + n, plan.out_np)
        else:  # each batch's (address, size) pairs, made into the output's buffers batch by batch
            self.values, self.values_ptr, self.values_keep = mem.scratch(2 * rows, np.int64)
            learned = results.output_per_row((plan.kernel, mem.device))
            self.sink = StringSink(mem, n, plan.string_out, -(-n // rows) if n else 1, learned and learned[1])
        self.writes_flags = spec.null_mode == NullMode.AWARE or spec.flags
        # per batch one byte a row, packed into the output's bitmap after each batch (valid_rows: -1 on a GPU)
        self.flags = mem.scratch(rows, np.uint8)[0] if self.writes_flags else mem.stand_in(np.uint8)
        self.bitmap, self.bitmap_keep, self.valid_rows = None, None, 0
        if self.writes_flags:
            self.bitmap, self.bitmap_address, self.bitmap_keep = mem.new((n + 7) // 8, np.uint8)
        self.arrow_type: DataType | None = plan.arrow_out
        self.buffers: list[int] = []
        self.offset = 0
        self.validity, self.null_count = 0, 0

    def batch_buffers(self, start: int, b: int) -> tuple[Any, Any]:
        """(values, flags) as the kernel of rows [start, start + b) writes them (its row i is row start + i)."""
        if self.sink is not None or self.rows >= self.n:
            return self.values, self.flags
        if self.plan.spec.out == Kind.BALLOT:  # a word per 32 rows; batches start at multiples of 1024 rows
            return self.mem.part(self.values, start // 32, (b + 31) // 32), self.flags
        return self.mem.part(self.values, start, b), self.flags

    def range_reads(self, b: int) -> _RangeReads | None:
        """GPU: what the host reads of a range of ``b`` rows after their launch, in the wait for the launch's
        arena claim (string_results.launch_with_arena): the total bytes of their strings (which size the data)
        and their valid rows (the output's null count, which a reader would otherwise wait for)."""
        return _RangeReads(self, b) if self.mem.gpu and (self.sink is not None or self.writes_flags) else None

    def add_batch(self, start: int, b: int, strings: bool = True, reads: _RangeReads | None = None,
                  packed: bool = False) -> None:
        """After the launch of rows [start, start + b): their strings gathered (unless ``strings`` is False: a
        pipelined range gathers its own), their flags packed (unless ``packed``: a pipelined range's finishing
        kernel packed them, uncounted). ``reads``: what the host read of the launch."""
        if self.sink is not None and strings:
            scanned = (reads.scan, reads.total) if reads is not None and reads.total is not None else None
            self.sink.add(self.values, start, b, scanned)
        if self.writes_flags and b:
            valid = -1 if packed else self.mem.pack_bits_into(self.flags, b, self.bitmap, start // 8)
            if valid < 0 and reads is not None and reads.valid is not None:
                valid = reads.valid
            self.valid_rows = -1 if valid < 0 or self.valid_rows < 0 else self.valid_rows + valid

    def assemble_values(self) -> None:
        """The value buffers of the Arrow array, from what the kernel wrote."""
        plan, mem = self.plan, self.mem
        if self.sink is not None:
            self.arrow_type, self.buffers = self.sink.finish(self.keep)
        elif plan.spec.out == Kind.BALLOT:  # the kernel wrote the bits
            self.keep.append(self.values_keep)
            self.buffers = [self.values_ptr]
        elif plan.out_np is None:  # bool output: bytes -> bits; the bytes are dropped after finish()
            address, packed, _ = mem.pack_bits(self.values, self.pad + self.n, count_ones=False)
            self.keep.append(packed)
            self.buffers, self.offset = [address], self.pad
        else:
            self.keep.append(self.values_keep)
            self.buffers, self.offset = [self.values_ptr], self.pad

    def finish(self) -> Any:
        """The Arrow array (held): on a GPU it carries an event recorded after all the work above, and the
        scratch is released when that event fires. The caller drops this object afterwards, and with it the
        pool buffers only the queued work reads (class docstring)."""
        mem, device = self.mem, self.mem.device
        event = None
        if mem.gpu:
            event = runtime.SyncEvent(mem.stream, device.id)
            self.keep.append(event)
            device_memory.keep_until(event, self.scratch)
        return _capsules.build(self.arrow_type, self.n, self.null_count, self.offset, [self.validity, *self.buffers], [],
                               device_type=device.code, device_id=device.id, keepalive=self.keep,
                               sync_event=event.address if event else None)


class _RangeReads:
    """The reads of one range after its launch (:meth:`ChunkOutput.range_reads`): :meth:`queue` queues the scan
    of its string sizes and the count of its valid rows and names the device values; :meth:`took` keeps what the
    host read of them (``total``, ``valid``) for :meth:`ChunkOutput.add_batch`."""

    def __init__(self, output: ChunkOutput, b: int) -> None:
        self.output, self.b = output, b
        self.scan: Any = None
        self.total: int | None = None
        self.valid: int | None = None

    def queue(self) -> list[tuple[Any, int]]:
        out, b = self.output, self.b
        wanted = []
        if out.sink is not None:
            self.scan = out.sink.scan(out.values, b)
            wanted.append((self.scan, b))
        if out.writes_flags and b == out.n:  # over several ranges some count on the GPU: the null count stays -1
            with out.mem.on_device():
                wanted.append((out.mem.cp.count_nonzero(out.mem.cp.asarray(out.flags)[:b]).reshape(1), 0))
        return wanted

    def took(self, values: list[int]) -> None:
        if self.output.sink is not None:
            self.total = values.pop(0)
        self.valid = values.pop(0) if values else None
