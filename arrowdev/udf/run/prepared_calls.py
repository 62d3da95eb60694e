"""UDF calls repeated over GPU columns of one layout, with the host work before the launch cut to what changes.

A call of ``col.apply(f)`` on a GPU spends its host time deciding things that are the same as last time (the
plan, the kernel's argument layout, the output's type) before the kernel is queued; at 10^7 rows that time
was a third of the call (docs/udf.md). A :class:`PreparedCall` keeps those decisions per (UDF, input types,
options, device) and does per call only what changes: the wait on the inputs' sync events, the output buffer,
the kernel's parameters (addresses and lengths), the launch; then, while the kernel runs, the output's event
and Arrow array, as the general path (execute.py) makes them.

Calls take this path when every input is one chunk without nulls, on the current GPU, on arrowdev's stream,
and the UDF's output is numbers or bools (no string arena, no row that may fail, not null-aware); the first
call of each layout goes the general way (it compiles, and its launch makes the direct-launch entry).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from ... import _capsules
from ...core import chunks as _chunked
from ...gpu import memory, runtime
from ...core.types import DataType, Device
from ..compile import codegen
from . import launch
from .inputs import Input
from .plan import Plan, plan_for
from ..spec import UDF, Kind, NullMode, Target

__all__ = ["call_prepared", "prepare", "why_not_prepared"]

_prepared: dict[tuple, PreparedCall | None] = {}  # None: the layout was looked at and does not qualify
_lock = threading.Lock()
_OFFSET_KINDS = {Kind.UTF8_32: 4, Kind.UTF8_64: 8}
_GPU_MEMORY = (Device("cuda", 0).code, Device("cuda_managed", 0).code)  # ArrowDeviceType codes


def _key(f: Callable | UDF, columns: list[Any], null_aware: bool, out_type: DataType | None,
         string_type: str) -> tuple[tuple | None, list[Any]]:
    """(the prepared call's key, each column's one chunk); a key of None where a column is not one chunk
    without nulls on a GPU."""
    layout, helds = [], []
    for col in columns:
        chunks = _chunked.chunks(col)
        if len(chunks) != 1:
            return None, helds
        held = chunks[0]
        if held.device_type not in _GPU_MEMORY or (_chunked.null_counts(col)[0] != 0 and held.buffers[0]):
            return None, helds  # not CUDA / CUDA managed memory, or a validity bitmap with nulls (or not counted)
        layout.append((_chunked.dtype(col), held.device_type, held.device_id))
        helds.append(held)
    return (UDF.of(f).key, null_aware, out_type, string_type, tuple(layout)), helds


def call_prepared(f: Callable | UDF, columns: list[Any], null_aware: bool, out_type: DataType | None,
                  string_type: str) -> tuple[DataType, list[Any]] | None:
    """``f`` over ``columns`` through a prepared call, as (type, chunks); None where there is none for this
    layout (yet)."""
    key, helds = _key(f, columns, null_aware, out_type, string_type)
    prepared = None if key is None else _prepared.get(key)
    if prepared is None:
        return None
    return prepared(helds)


def why_not_prepared(f: Callable | UDF, columns: list[Any], null_aware: bool, out_type: DataType | None,
                     string_type: str) -> str:
    """Why a call of ``f`` over ``columns`` does not take a prepared call (for errors)."""
    key, _ = _key(f, columns, null_aware, out_type, string_type)
    if key is None:
        return "prepared calls need every input to be one chunk without nulls on the GPU"
    if key not in _prepared:
        return ("it has not been called on inputs of this layout before: call it twice first (the first call "
                "compiles, the second prepares it)")
    if _prepared[key] is None:
        return ("its output needs host work after the kernel (strings made, rows that may fail, null-aware "
                "results, or string_view inputs), or its arguments take numba's own launch")
    return "another device is current, or the inputs' lengths differ"


def prepare(f: Callable | UDF, columns: list[Any], null_aware: bool, out_type: DataType | None,
            string_type: str) -> None:
    """After a call went the general way: keeps a prepared call for its layout where the layout qualifies
    and the kernel has a direct launch."""
    key, helds = _key(f, columns, null_aware, out_type, string_type)
    if key is None or key in _prepared:
        return
    inputs = [Input(_chunked.dtype(col), held, 0) for col, held in zip(columns, helds)]
    plan = plan_for(f, inputs, Target.CUDA, null_aware, out_type, None, string_type)
    device_id = helds[0].device_id
    entry = launch.direct_entry(plan.kernel, device_id)
    if not PreparedCall.qualifies(plan, inputs):
        prepared = None
    elif entry is None:
        return  # not launched directly yet: looked at again after the next call
    else:
        prepared = PreparedCall.make(plan, inputs, entry, device_id)
    with _lock:
        _prepared[key] = prepared


class PreparedCall:
    """What a call over one layout needs beyond the inputs' addresses and lengths."""

    __slots__ = ("entry", "device_id", "device_type", "stream", "readers", "out_dtype", "stand_in", "ballot",
                 "arrow_type")

    @staticmethod
    def qualifies(plan: Plan, inputs: list[Input]) -> bool:
        """Whether calls of ``plan`` need no host work after the kernel (no strings made, no row that may
        fail, not null-aware, numbers or bools out) and read no string_view."""
        spec = plan.spec
        return not (spec.arena or spec.flags or spec.null_mode != NullMode.NONE
                    or plan.out_np is None and spec.out != Kind.BALLOT or any(x.kind == Kind.UTF8_VIEW for x in inputs))

    @classmethod
    def make(cls, plan: Plan, inputs: list[Input], entry: Any, device_id: int) -> PreparedCall | None:
        """The prepared call of a plan that :meth:`qualifies`; None where the kernel's arguments are not
        laid out as this class passes them."""
        # the kernel's arguments as execute.py passes them: n, pad, values, flags, arena state, then per input
        # data, validity, offset, extra (arrays: True)
        if entry.arrays != [False, False, True, True, False] + [True, True, False, False] * len(inputs):
            return None
        return cls(plan, inputs, entry, device_id)

    def __init__(self, plan: Plan, inputs: list[Input], entry: Any, device_id: int) -> None:
        self.entry, self.device_id = entry, device_id
        self.device_type = inputs[0].held.device_type
        self.stream = runtime.stream_for(device_id)
        self.ballot = plan.spec.out == Kind.BALLOT
        self.out_dtype = np.dtype(np.uint32) if self.ballot else plan.out_np
        self.arrow_type = plan.arrow_out
        self.stand_in = _stand_in_fields(device_id)  # passed for the flags and every input's validity: none
        self.readers = [_reader(x.kind, x.np_dtype) for x in inputs]

    def __call__(self, helds: list[Any]) -> tuple[DataType, list[Any]] | None:
        """The output's type and chunk over input chunks ``helds``; None, doing nothing, where the general
        path must run (another device is current, lengths differ)."""
        if runtime.cupy().cuda.runtime.getDevice() != self.device_id:
            return None  # the general path switches devices
        n = helds[0].length
        if any(h.length != n for h in helds):
            return None  # the general path names the mismatch
        stream = self.stream
        runtime.wait_on_events(stream, [held.sync_event for held in helds])  # the inputs' producers first (C7)
        count = (n + 31) // 32 if self.ballot else n
        out = memory.DeviceBuffer(count * self.out_dtype.itemsize, self.device_id, stream, device_is_current=True)
        item = self.out_dtype.itemsize
        flat = [n, 0, 0, 0, count, item, out.ptr, count, item, *self.stand_in, 0]
        for held, reader in zip(helds, self.readers):
            flat += reader(held, n)
            flat += self.stand_in
            flat += (held.offset, held.buffers[2] if reader in (_strings, _large_strings) else 0)
        rows_per_thread = codegen.BALLOT_ROWS if self.ballot else 1
        launch.launch_flat(self.entry, self.device_id, launch.grid_blocks(n, rows_per_thread), stream.ptr, flat,
                           device_is_current=True)
        event = runtime.SyncEvent(stream, self.device_id)
        memory.keep_until(event, [helds])  # the inputs, read by the queued kernel
        held = _capsules.build(self.arrow_type, n, 0, 0, [0, out.ptr], [], device_type=self.device_type,
                               device_id=self.device_id, keepalive=[out, event], sync_event=event.address)
        return self.arrow_type, [held]


def _stand_in_fields(device_id: int) -> tuple[int, ...]:
    """The seven parameter fields of the one-byte stand-in array passed for a missing buffer."""
    from .buffers import Memory

    view = Memory(Device("cuda", device_id)).stand_in(np.uint8)
    return (0, 0, view.size, 1, view.ptr, view.size, 1)


def _reader(kind: Kind, np_dtype: np.dtype | None) -> Callable[[Any, int], tuple[int, ...]]:
    """The seven parameter fields of an input's data array for ``n`` rows (as inputs.Input passes it)."""
    if kind in _OFFSET_KINDS:
        return _strings if kind == Kind.UTF8_32 else _large_strings
    if np_dtype is None:
        return _bits
    item = np_dtype.itemsize

    def numbers(held: Any, n: int) -> tuple[int, ...]:
        size = held.offset + n
        return (0, 0, size, item, held.buffers[1], size, item)
    return numbers


def _bits(held: Any, n: int) -> tuple[int, ...]:
    size = (held.offset + n + 7) // 8
    return (0, 0, size, 1, held.buffers[1], size, 1)


def _strings(held: Any, n: int) -> tuple[int, ...]:
    size = held.offset + n + 1
    return (0, 0, size, 4, held.buffers[1], size, 4)


def _large_strings(held: Any, n: int) -> tuple[int, ...]:
    size = held.offset + n + 1
    return (0, 0, size, 8, held.buffers[1], size, 8)
