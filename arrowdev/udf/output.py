"""One chunk's output over its whole life (:class:`ChunkOutput`): the buffers the kernel writes, what the
finished Arrow array holds on to, and what queued GPU work reads until the output's sync event fires."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _capsules
from ..cuda import memory as device_memory, runtime
from ..types import DataType
from . import string_results as results
from .memory import Memory
from .plan import Plan
from .spec import Kind, NullMode

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

    def __init__(self, mem: Memory, plan: Plan, n: int, pad: int) -> None:
        self.mem, self.plan, self.n, self.pad = mem, plan, n, pad
        self.keep: list[Any] = []
        self.scratch: list[Any] = []
        spec = plan.spec
        if spec.out == Kind.BALLOT:
            self.values, self.values_ptr, self.values_keep = mem.new((n + 31) // 32, np.uint32)
        elif plan.string_out is None:
            self.values, self.values_ptr, self.values_keep = mem.new(pad + n, np.uint8 if plan.out_np is None
                                                                     else plan.out_np)
        elif spec.out == Kind.UTF8_VIEW:
            self.values, self.values_ptr, self.values_keep = mem.new(4 * n, np.int32)
        else:
            self.values, self.values_ptr, self.values_keep = mem.new(2 * n, np.int64)
        self.writes_flags = spec.null_mode == NullMode.AWARE or spec.flags
        # the flags view owns its buffer: it lives as long as this object
        self.flags = mem.new(n, np.uint8)[0] if self.writes_flags else mem.stand_in(np.uint8)
        self.arrow_type: DataType | None = plan.arrow_out
        self.buffers: list[int] = []
        self.offset = 0
        self.validity, self.null_count = 0, 0

    def assemble_values(self, arena: Any) -> None:
        """The value buffers of the Arrow array, from what the kernel wrote (``arena``: the launch's string
        arena or None)."""
        plan, mem = self.plan, self.mem
        if plan.string_out is not None:
            self.arrow_type, self.buffers = results.build_string_output(
                plan.string_out, mem, self.n, self.values, self.values_keep, arena, self.keep)
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
