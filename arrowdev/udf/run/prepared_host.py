"""UDF calls repeated over CPU columns of one layout, with the host work around the kernel cut to what changes.

A CPU call's kernel over 2048 rows takes about a microsecond; the general path (plan, inputs, output,
validity: execute.py) spent some 30 more deciding what it decided last time. Engines that hand a UDF small
batches (DuckDB calls a function once per vector of 2048 rows) paid that on every batch. A :class:`HostCall`
keeps the decisions per (UDF, input types and nullability, options) and does per call only what changes:
a NumPy view of each input buffer, the output buffer, the kernel call, the validity, the Arrow array.

Calls take this path when every input is one non-empty chunk in CPU memory, and the UDF's output is numbers
or bools that need no host work after the kernel (no strings made, no row that may fail); nulls propagate
from one input (its bitmap shared, as execute.py shares it) or from several whose bitmaps start on a byte
(ANDed bytewise), or the UDF is null-aware. A UDF that makes string values (any of the three types), nulls
propagating, takes :class:`HostStringCall`: the kernel into an arena, then one gather into the output's
offsets and data (string_results.py). The first call of each layout goes the general way (it compiles the
kernel) and then prepares this one. docs/hosts.md has the measured costs.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Callable

import numpy as np

from ... import _capsules
from ...core import chunks as _chunked
from ...core.types import DataType, Device
from . import string_gathers as gathers, string_results as results
from .buffers import Memory, host_address as _address
from .execute import WORKING_SET
from .inputs import Input
from .plan import Plan, plan_for
from .string_sink import StringSink
from ..spec import UDF, Kind, NullMode, Target, function_key

__all__ = ["HostCall", "HostStringCall", "bitmaps_flag", "call_prepared", "lookup", "numpy_runner", "prepare",
           "pyarrow_runner"]

_CPU = 1  # ArrowDeviceType of CPU memory
_calls: dict[tuple, HostCall | None] = {}  # None: the layout was looked at and does not qualify
_lock = threading.Lock()
# One ctypes type spanning any buffer: a view of `count` elements at an address reads only those (one type,
# not one per length as `c_char * nbytes` would make and keep)
_ANY = ctypes.c_char * (1 << 46)
_U8, _I32, _I64, _U16 = (np.dtype(t) for t in (np.uint8, np.int32, np.int64, np.uint16))
_STAND_IN = np.zeros(8, dtype=np.uint8)  # passed for a validity or flags array the kernel never reads
# Buffers of at most this many bytes are taken from the call's recent ones (:class:`_Recycler`)
RECYCLE_BYTES = 256 << 10


class _Recycler:
    """The output and flag buffers of a prepared call's last few calls, taken again once nothing holds them.
    A buffer of a DuckDB vector (16 KiB) that is new each call is new pages each call: glibc returns the top
    of a thread's heap to the system when it is freed, so the next ``np.empty`` faults its pages in again, 4-5
    us of a call inside DuckDB's threads (the kernel then writes them: 8 us where it takes 1 us on pages
    already there). A buffer is free when its only references are this list's and the lookup's own (the Arrow
    array made over it holds one through its buffer, and so does an ArrowColumn's output); so a result still
    held by anyone is never written. Small buffers only (``RECYCLE_BYTES``): large ones are mapped anew
    whatever is done, and keeping them would hold memory."""

    __slots__ = ("arrays", "lock")
    KEEP = 4  # buffers kept per call: DuckDB holds a vector's result only until the next

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.lock = threading.Lock()  # DuckDB calls from several threads: one buffer to one of them

    def take(self, count: int, dtype: np.dtype) -> np.ndarray:
        """``count`` elements of ``dtype`` (contents undefined) that nothing else holds."""
        if count * dtype.itemsize > RECYCLE_BYTES:
            return np.empty(count, dtype)
        arrays = self.arrays
        with self.lock:  # the one returned is referenced by the caller before another thread looks at it
            for array in arrays:
                # references: the list, this loop's variable, getrefcount's argument; any more is a holder
                if sys.getrefcount(array) == 3 and array.shape[0] == count and array.dtype == dtype:
                    return array
            array = np.empty(count, dtype)
            if len(arrays) >= self.KEEP:
                del arrays[0]
            arrays.append(array)
            return array


def _view(address: int, count: int, dtype: np.dtype) -> np.ndarray:
    """``count`` elements of ``dtype`` at ``address`` (no copy; the caller keeps the owner alive)."""
    return np.frombuffer(_ANY.from_address(address), dtype, count)


def _layout(columns: list[Any]) -> tuple[tuple | None, list[Any], list[int]]:
    """(the layout part of a call's key, each column's one chunk, their null counts); a layout of None
    where a column is not one non-empty chunk in CPU memory or the lengths differ."""
    helds, nulls, kinds = [], [], []
    n = -1
    for col in columns:
        chunks = _chunked.chunks(col)
        if len(chunks) != 1:
            return None, helds, nulls
        held = chunks[0]
        if held.device_type != _CPU or held.length != n and n >= 0 or not held.length:
            return None, helds, nulls
        n = held.length
        count = _chunked.chunk_null_count(col, 0)
        nullable = count > 0 and bool(held.buffers and held.buffers[0])  # a null-type column has no buffers
        helds.append(held)
        nulls.append(count if nullable else 0)
        kinds.append((_chunked.dtype(col), nullable))
    return (tuple(kinds), bitmaps_flag([h.offset for h, c in zip(helds, nulls) if c])), helds, nulls


def bitmaps_flag(offsets: list[int]) -> bool:
    """The part of a layout's key that the nullable inputs' offsets decide: the plan differs where one nullable
    input's bitmap starts mid-byte (plan.py); several are ANDed here bytewise only where each starts on a byte."""
    return (offsets[0] % 8 != 0) if len(offsets) == 1 else all(o % 8 == 0 for o in offsets)


def lookup(f: UDF, kinds: tuple, flag: bool, null_aware: bool, out_type: DataType | None,
           string_type: str) -> HostCall | None:
    """The prepared call for inputs of ``kinds`` ((type, nullable) per input; ``flag``: :func:`bitmaps_flag`
    of the nullable inputs' offsets), for callers that hold Arrow buffers rather than columns (an engine's
    PyArrow arrays, integrations/batches.py); None where the layout has not been called before or does not
    qualify."""
    return _calls.get((f.key, null_aware, out_type, string_type, (kinds, flag)))


def call_prepared(f: UDF, columns: list[Any], null_aware: bool, out_type: DataType | None,
                  string_type: str) -> tuple[DataType, list[Any]] | None:
    """``f`` over ``columns`` through a prepared call, as (type, chunks); None where there is none for this
    layout (yet), or it does not qualify."""
    layout, helds, nulls = _layout(columns)
    if layout is None:
        return None
    call = _calls.get((f.key, null_aware, out_type, string_type, layout))
    return None if call is None else call(helds, nulls)


def prepare(f: UDF, columns: list[Any], null_aware: bool, out_type: DataType | None, string_type: str) -> None:
    """After a call went the general way: keeps a prepared call for its layout where the layout qualifies."""
    layout, helds, nulls = _layout(columns)
    if layout is None:
        return
    key = (f.key, null_aware, out_type, string_type, layout)
    if key in _calls:
        return
    inputs = [Input(_chunked.dtype(col), held, count) for col, held, count in zip(columns, helds, nulls)]
    plan = plan_for(f, inputs, Target.CPU, null_aware, out_type, None, string_type)
    call: HostCall | None = None
    if HostCall.qualifies(plan, inputs, layout[1]):
        call = HostCall(plan, inputs, layout[1])
    elif HostStringCall.qualifies(plan, inputs):
        call = HostStringCall(plan, inputs)
    with _lock:
        _calls[key] = call


class HostCall:
    """What a CPU call over one layout needs beyond the inputs' addresses and lengths."""

    __slots__ = ("kernel", "readers", "arrow_type", "out_dtype", "bits", "mode", "share", "validity", "recycled",
                 "fixed_width", "aware")

    @staticmethod
    def qualifies(plan: Plan, inputs: list[Input], byte_aligned: bool) -> bool:
        """Whether calls of ``plan`` need no host work after the kernel but their validity: no strings made,
        no row that may fail, numbers or bools out, nulls from at most one input or from byte-aligned
        bitmaps (or a null-aware UDF)."""
        spec = plan.spec
        nullable = sum(x.has_validity for x in inputs)
        return not (spec.arena or spec.flags or spec.window or plan.string_out is not None
                    or spec.out not in (Kind.BITS, *(k for k in Kind if k.numpy is not None))
                    or spec.null_mode == NullMode.PROPAGATE and nullable > 1 and not byte_aligned)

    def __init__(self, plan: Plan, inputs: list[Input], byte_aligned: bool) -> None:
        self.kernel, self.arrow_type, self.mode = plan.kernel, plan.arrow_out, plan.spec.null_mode
        self.bits = plan.out_np is None
        self.out_dtype = _U8 if self.bits else plan.out_np
        self.readers = [(_reader(x.kind, x.np_dtype), x.has_validity) for x in inputs]
        self.fixed_width = not any(x.kind in (Kind.UTF8_32, Kind.UTF8_64, Kind.UTF8_VIEW) for x in inputs)
        nullable = sum(x.has_validity for x in inputs)
        self.share = self.mode == NullMode.PROPAGATE and nullable == 1
        self.aware = self.mode == NullMode.AWARE
        self.validity = self.aware or nullable > 0
        self.recycled = _Recycler()

    def __call__(self, helds: list[Any], nulls: list[int]) -> tuple[DataType, list[Any]]:
        """The output's type and chunk over input chunks ``helds`` (null counts ``nulls``)."""
        n = helds[0].length
        values, pad, validity, null_count = self.compute([h.buffers for h in helds], [h.offset for h in helds],
                                                         nulls, n)
        keep: list[Any] = [values]
        address = 0
        if type(validity) is int:  # an input's own bitmap: the output keeps that input alive
            held = helds[validity]
            keep.append(held)
            address = held.buffers[0] + held.offset // 8
        elif validity is not None:
            keep.append(validity)
            address = _address(validity)
        held = _capsules.build(self.arrow_type, n, null_count, pad, [address, _address(values)], [],
                               device_type=_CPU, device_id=helds[0].device_id, keepalive=keep)
        return self.arrow_type, [held]

    def compute(self, buffers: list[tuple[int, ...]], offsets: list[int], nulls: list[int],
                n: int) -> tuple[np.ndarray, int, Any, int]:
        """Runs the kernel over ``n`` rows of inputs given by their buffers' addresses (in the C Data order),
        offsets and null counts. Returns (values: the output's data buffer, bools as bits; the output's
        offset; its validity: None, the index of the input whose bitmap it shares (from that input's
        ``offset // 8``-th byte), or a new bitmap; its null count)."""
        pad = next(o for o, c in zip(offsets, nulls) if c) % 8 if self.share else 0  # bits line up
        out = self.recycled.take(pad + n, self.out_dtype)
        flags = self.recycled.take(n, _U8) if self.aware else _STAND_IN
        args: list[Any] = [n, pad, out, flags, 0]
        for addresses, offset, (reader, nullable) in zip(buffers, offsets, self.readers):
            data, extra = reader(addresses, offset + n)
            args += (data, _view(addresses[0], (offset + n + 7) >> 3, _U8) if nullable else _STAND_IN, offset, extra)
        self.kernel(*args)
        if self.bits:  # bytes -> bits
            out = np.packbits(out, bitorder="little")
        if self.aware:
            return out, pad, np.packbits(flags, bitorder="little"), n - int(np.count_nonzero(flags))
        if not self.validity:
            return out, pad, None, 0
        sources = [k for k, c in enumerate(nulls) if c]
        if len(sources) == 1:  # the input's own bitmap (validity.py)
            return out, pad, sources[0], nulls[sources[0]]
        nbytes = (n + 7) >> 3
        first = sources[0]
        combined = _view(buffers[first][0] + offsets[first] // 8, nbytes, _U8).copy()
        for k in sources[1:]:
            np.bitwise_and(combined, _view(buffers[k][0] + offsets[k] // 8, nbytes, _U8), out=combined)
        if n % 8:
            combined[-1] &= (1 << (n % 8)) - 1  # bits past the last row: not counted
        return out, pad, combined, n - int(np.bitwise_count(combined).sum())

    def plain_numbers(self) -> bool:
        """Whether calls take inputs of numbers or bools without nulls and propagate nulls (the runners' calls:
        no validity to read or write, no strings made)."""
        return (not isinstance(self, HostStringCall) and self.mode == NullMode.NONE and self.fixed_width
                and not any(nullable for _, nullable in self.readers))

    def pyarrow_array(self, held: list[Any], offsets: list[int], nulls: list[int], n: int, out_type: Any) -> Any:
        """The PyArrow array of ``out_type`` over ``n`` rows of PyArrow inputs given by their buffers (``held``:
        PyArrow's lists of buffers), offsets and null counts."""
        import pyarrow as pa

        values, pad, validity, null_count = self.compute(
            [tuple(b.address if b is not None else 0 for b in buffers) for buffers in held], offsets, nulls, n)
        if type(validity) is int:  # an input's bitmap, shared
            bitmap = held[validity][0].slice(offsets[validity] // 8)
        else:
            bitmap = None if validity is None else pa.py_buffer(validity)
        return pa.Array.from_buffers(out_type, n, [bitmap, pa.py_buffer(values)], null_count, pad)


class HostStringCall(HostCall):
    """A CPU call over one layout whose UDF makes ``string``, ``large_string`` or ``string_view`` values (nulls
    propagating: the kernel flags them with the rows that fail): the kernel writes each row's (address, size)
    pair and its strings into an arena (its bytes from the host scratch, whose blocks keep their pages between
    calls; the arena goes with the call, as ``debug.leak_check`` expects), then the chunk's :class:`StringSink`
    gathers them into the output's buffers in one batch, as execute.py does for a chunk of one range."""

    __slots__ = ("plan", "mem", "key", "input_bytes", "shelf", "finish", "limit")
    MAX_ROWS = 1 << 16  # larger calls go the general way, in ranges of rows that bound their working set
    SHELVED_BYTES = 1 << 20  # an arena up to this size is kept for the thread's next call (its making cost a
    # 2048-row DuckDB call a fifth of its time: scratch block, state array, counts)

    @staticmethod
    def qualifies(plan: Plan, inputs: list[Input]) -> bool:  # type: ignore[override]
        """Whether calls of ``plan`` make string, large_string or string_view values, not null-aware, no window:
        the kernel flags each row (null in, or failed: a null out), and the flags are the output's validity."""
        spec = plan.spec
        nulls_in = any(x.has_validity for x in inputs)
        return (plan.string_out in ("string", "large_string", "string_view") and bool(spec.arena)
                and not spec.window and spec.null_mode != NullMode.AWARE and (spec.flags or not nulls_in))

    def __init__(self, plan: Plan, inputs: list[Input]) -> None:
        super().__init__(plan, inputs, True)
        self.plan, self.mem = plan, Memory(Device.cpu())
        self.key = (plan.kernel, self.mem.device)  # what the general path learns arena sizes under
        self.input_bytes = 32 * max(sum(x.kind.is_string for x in inputs), 1)  # a first guess a row, as execute
        self.shelf = threading.local()  # each thread's arena from its last call (DuckDB calls from several)
        import pyarrow as pa

        self.arrow_type = DataType.from_arrow(getattr(pa, plan.string_out)())  # string: large_string past 2 GiB
        large = plan.string_out == "large_string"
        # string and large_string outputs: after the kernel, one compiled call makes the output (a call whose
        # thread has an arena from its last call large enough; the general way after a launch that did not hold)
        self.finish = gathers.finish_strings(large) if plan.string_out != "string_view" else None
        self.limit = 2**62 if large else results.STRING_LIMIT

    def takes(self, n: int) -> bool:
        """Whether a call of ``n`` rows is small enough for one arena within the working set (execute.py's
        ``WORKING_SET``, at what a row of this kernel claimed last time)."""
        learned = results.bytes_per_row(self.key)
        return n <= self.MAX_ROWS and (learned is None or learned * n <= WORKING_SET)

    def __call__(self, helds: list[Any],  # type: ignore[override]
                 nulls: list[int]) -> tuple[DataType, list[Any]] | None:
        n = helds[0].length
        if not self.takes(n):
            return None
        arrow_type, held = self.strings([h.buffers for h in helds], [h.offset for h in helds], n)
        return arrow_type, [held]

    def pyarrow_array(self, held: list[Any], offsets: list[int], nulls: list[int], n: int, out_type: Any) -> Any:
        if not self.takes(n):
            return None
        return self.pyarrow_from([tuple(b.address if b is not None else 0 for b in buffers) for buffers in held],
                                 offsets, n, out_type)

    def pyarrow_from(self, buffers: list[tuple[int, ...]], offsets: list[int], n: int, out_type: Any) -> Any:
        """The PyArrow array (of ``out_type``) of the strings the UDF makes over ``n`` rows of inputs given by their
        buffers' addresses and offsets (:meth:`strings`)."""
        import pyarrow as pa

        arrow_type, arrays, out_buffers, keep, bitmap, null_count = self._made(buffers, offsets, n)
        if arrays is not None:  # straight from the NumPy arrays (the held array's export and import cost 3x)
            bits = pa.py_buffer(bitmap) if bitmap is not None else None
            return pa.Array.from_buffers(out_type, n, [bits, *(pa.py_buffer(a) for a in arrays)], null_count)
        held = self._held(arrow_type, n, null_count, _addresses(arrays, out_buffers, bitmap), keep)
        return pa.Array._import_from_c_capsule(*held.export_pair(False))

    def strings(self, buffers: list[tuple[int, ...]], offsets: list[int], n: int) -> tuple[DataType, Any]:
        """(type, held array) of the strings the UDF makes over ``n`` rows of inputs given by their buffers'
        addresses and offsets (a row the kernel flags, null in or failed, is null)."""
        arrow_type, arrays, out_buffers, keep, bitmap, null_count = self._made(buffers, offsets, n)
        return arrow_type, self._held(arrow_type, n, null_count, _addresses(arrays, out_buffers, bitmap), keep)

    def _held(self, arrow_type: DataType, n: int, null_count: int, addresses: list[int], keep: list[Any]) -> Any:
        """The held array over the buffers at ``addresses`` (the validity's first), keeping ``keep`` alive."""
        return _capsules.build(arrow_type, n, null_count, 0, addresses, [], device_type=_CPU,
                               device_id=self.mem.device.id, keepalive=keep)

    def _made(self, buffers: list[tuple[int, ...]], offsets: list[int],
              n: int) -> tuple[DataType, tuple[np.ndarray, np.ndarray] | None, list[int] | None, list[Any], Any, int]:
        """The strings the UDF makes over ``n`` rows (:meth:`strings`): (type, the offsets and data arrays where
        they were made exactly sized or else None, the addresses of the buffers after the validity where the arrays
        are None (:func:`_addresses` makes the whole list), what the array must keep, the validity bitmap or None,
        the null count)."""
        inputs: list[Any] = []
        for addresses, offset, (reader, nullable) in zip(buffers, offsets, self.readers):
            data, extra = reader(addresses, offset + n)
            validity = _view(addresses[0], (offset + n + 7) >> 3, _U8) if nullable else _STAND_IN
            inputs += (data, validity, offset, extra)
        kept = getattr(self.shelf, "kept", None)
        self.shelf.kept = None  # this call's now (a call made inside it on this thread makes its own)
        shelved = None
        if kept is not None:
            made = self._finished(kept, inputs, n)
            if made is not None:
                return made
            shelved = kept[0]
            shelved.unshelve()
        pairs = self.recycled.take(2 * n, _I64)
        flags = self.recycled.take(n, _U8) if self.plan.spec.flags else _STAND_IN
        kernel = self.kernel

        def launch(arena: results.Arena) -> None:
            kernel(n, 0, pairs, flags, np.int64(arena.state_address), *inputs)

        outgrown = shelved.last_claimed if shelved is not None and shelved.last_claimed > shelved.capacity else 0
        arena = results.launch_with_arena(self.key, launch, self.mem, n, self.input_bytes * n, True, reuse=shelved,
                                          outgrown=outgrown)
        keep: list[Any] = []
        out_buffers: list[int] | None = None
        exact = self._offsets_and_data(pairs, n)
        if exact is not None:
            keep += exact
            arrow_type = self.arrow_type
        else:  # string_view, or string data past what int32 offsets address: the chunk's sink (as execute.py)
            learned = results.output_per_row(self.key)  # int64 offsets from the start where it says so
            sink = StringSink(self.mem, n, self.plan.string_out, 1, learned and learned[1])
            sink.add(pairs, 0, n)
            arrow_type, out_buffers = sink.finish(keep)
            results.remember_output(self.key, sink.nbytes(), sum(sink.used), n)
        if arena.capacity <= self.SHELVED_BYTES:  # its strings copied out (the pairs point into it until here)
            arena.shelve()  # with scratch pairs and flags of the thread's own for its next calls
            self.shelf.kept = (arena, np.empty(2 * n, _I64), np.empty(n, _U8) if flags is not _STAND_IN else flags)
        del arena, shelved
        null_count, bitmap = 0, None
        if flags is not _STAND_IN:
            null_count = n - int(np.count_nonzero(flags))
            if null_count:
                bitmap = np.packbits(flags, bitorder="little")
                keep.append(bitmap)
        return arrow_type, exact, out_buffers, keep, bitmap, null_count

    def _finished(self, kept: tuple[results.Arena, np.ndarray, np.ndarray], inputs: list[Any], n: int) -> Any:
        """:meth:`_made`'s result from the thread's last call's arena and scratch (``kept``): one launch, then one
        compiled call making the output (``gathers.finish_strings``), the arena shelved again (it stays out of the
        live counts meanwhile: a call under way on this thread only); None, ``kept`` left to the general way, where
        the output is a string_view, the arena or scratch is smaller than this call takes, the arena overflowed,
        or the data passes what the offsets address."""
        arena, pairs, flags = kept
        if (self.finish is None or 2 * n > len(pairs) or flags is not _STAND_IN and n > len(flags)
                or arena.capacity < results.initial_capacity(self.key, n, self.input_bytes * n)):
            return None
        arena.reset()
        self.kernel(n, 0, pairs, flags, np.int64(arena.state_address), *inputs)
        claimed, offsets, data, bitmap, null_count = self.finish(n, pairs, flags, flags is not _STAND_IN,
                                                                 arena.state, self.limit)
        if null_count < 0:
            arena.last_claimed = claimed  # the general loop starts from it where the arena overflowed
            return None
        results.arena_held(self.key, arena, claimed, n)
        arena.count_released()
        nbytes = int(offsets[n])
        results.remember_output(self.key, nbytes + offsets.nbytes, nbytes, n)
        self.shelf.kept = kept
        keep: list[Any] = [offsets, data]
        if null_count:
            keep.append(bitmap)
        return self.arrow_type, (offsets, data), None, keep, bitmap if null_count else None, null_count

    def _offsets_and_data(self, pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """A ``string`` or ``large_string`` output's offsets and data, exactly sized, gathered from the kernel's
        (address, size) pairs in one pass (what the chunk's :class:`StringSink` does for one batch, without its
        generality: a DuckDB vector's call spent a quarter of its time there). None for ``string_view`` and for
        ``string`` data past what int32 offsets address."""
        string_out = self.plan.string_out
        if string_out == "string_view":
            return None
        nbytes = int(pairs[1:2 * n:2].sum())
        large = string_out == "large_string"
        if not large and nbytes > results.STRING_LIMIT:
            return None
        offsets = np.empty(n + 1, _I64 if large else _I32)
        offsets[0] = 0
        data = np.empty(max(nbytes, 1), _U8)
        data_address = _address(data)
        gathers.gather_with_offsets(n, pairs, offsets, 0, 0, data_address)
        results.remember_output(self.key, nbytes + offsets.nbytes, nbytes, n)
        return offsets, data


def _addresses(arrays: tuple[np.ndarray, ...] | None, out_buffers: list[int] | None, bitmap: Any) -> list[int]:
    """The buffers' addresses, the validity's first, of :meth:`HostStringCall._made`'s result (a PyArrow array
    made from its NumPy arrays needs none: worked out only for a held array)."""
    values = [_address(a) for a in arrays] if arrays is not None else out_buffers
    return [_address(bitmap) if bitmap is not None else 0, *(values or [])]


def pyarrow_runner(call: HostCall, f: Callable, types: tuple, out_type: Any) -> Callable[[Any, bool], Any] | None:
    """For engines that call a UDF on many small PyArrow batches (DuckDB: 2048 rows a call, where a call's Python
    costs three to five times what it does outside DuckDB): ``run(arrays, chunked)``, the PyArrow array of ``call``
    over ``arrays`` (PyArrow arrays, or with ``chunked`` chunked arrays of one chunk) of PyArrow ``types``, in one
    Python frame: the checks (UDF ``f`` is what ``call`` was compiled for, closure values included; one chunk, the
    types, no nulls, one length, CPU memory), then :meth:`HostCall.compute` and the array. None from ``run`` where
    a check fails (the general path takes the batch), and no ``run`` where ``call``'s inputs are not numbers or
    bools without nulls or its UDF decides nulls itself. A call that makes strings gets :func:`_string_runner`'s."""
    if isinstance(call, HostStringCall):
        return _string_runner(call, f, types, out_type)
    if not call.plain_numbers():
        return None
    import pyarrow as pa

    compute, from_buffers, py_buffer = call.compute, pa.Array.from_buffers, pa.py_buffer
    no_nulls = [0] * len(types)
    unchanged = _unchanged(f)
    no_offsets = (False,) * len(types)

    def run(arrays: Any, chunked: bool) -> Any:
        batch = _batch(arrays, chunked, types, no_offsets) if unchanged() else None
        if batch is None:
            return None
        buffers, offsets, n = batch
        values = compute(buffers, offsets, no_nulls, n)[0]
        return from_buffers(out_type, n, [None, py_buffer(values)], 0, 0)
    return run


def _batch(arrays: Any, chunked: bool, types: tuple, offsets_first: tuple) -> tuple[list, list, int] | None:
    """(the buffers' addresses as the prepared call takes them, the offsets, the rows) of a runner's batch: PyArrow
    arrays (with ``chunked``, chunked arrays of one chunk) of ``types``, no nulls, one length, in CPU memory, each
    an offsets buffer before its data where ``offsets_first`` says so; None where any of that does not hold."""
    if len(arrays) != len(types):
        return None
    buffers, offsets, n = [], [], -1
    for array, arrow_type, strings in zip(arrays, types, offsets_first):
        if chunked:
            if array.num_chunks != 1:
                return None
            array = array.chunk(0)
        if array.null_count or array.type != arrow_type or len(array) != n and n >= 0:
            return None
        n = len(array)
        held = array.buffers()
        if not n or not held[1].is_cpu:
            return None
        buffers.append((0, held[1].address, held[2].address) if strings else (0, held[1].address))
        offsets.append(array.offset)
    return buffers, offsets, n


def _string_runner(call: HostStringCall, f: Callable, types: tuple, out_type: Any) -> Callable[[Any, bool], Any] | None:
    """:func:`pyarrow_runner`'s ``run`` for a call that makes strings, over inputs of strings (``string``,
    ``large_string``, binary) or numbers without nulls: the same checks, then :meth:`HostStringCall.pyarrow_from`
    (the general batch path spent about 13 us of a 2048-row DuckDB call finding the prepared call). None where an
    input is a view type (PyArrow lists a view array's buffers otherwise than the C ABI does) or may be null."""
    import pyarrow as pa

    if any(nullable for _, nullable in call.readers) or any(
            pa.types.is_string_view(t) or pa.types.is_binary_view(t) for t in types):
        return None
    offsets_first = tuple(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                          or pa.types.is_large_binary(t) for t in types)
    unchanged = _unchanged(f)

    def run(arrays: Any, chunked: bool) -> Any:
        batch = _batch(arrays, chunked, types, offsets_first) if unchanged() else None
        if batch is None or not call.takes(batch[2]):
            return None
        return call.pyarrow_from(*batch, out_type)
    return run


def numpy_runner(call: HostCall, f: Callable, dtypes: tuple) -> Callable[[list[np.ndarray]], Any] | None:
    """For engines whose batches are NumPy arrays without nulls (a Polars Series of numbers is one, zero-copy):
    ``run(arrays)``, the NumPy array of ``call``'s values over ``arrays`` (one-dimensional, contiguous, of
    ``dtypes``), checked as :func:`pyarrow_runner` checks its batches; None from ``run`` where a check fails. No
    ``run`` where ``call`` is not one of numbers over numbers without nulls (bools come out as bits)."""
    if not call.plain_numbers() or call.bits:
        return None
    compute = call.compute
    no_nulls, offsets = [0] * len(dtypes), [0] * len(dtypes)
    unchanged = _unchanged(f)

    def run(arrays: list[np.ndarray]) -> Any:
        if len(arrays) != len(dtypes) or not unchanged():
            return None
        n = len(arrays[0])
        buffers = []
        for array, dtype in zip(arrays, dtypes):
            if array.dtype != dtype or array.ndim != 1 or len(array) != n or not array.flags.c_contiguous:
                return None
            buffers.append((0, array.__array_interface__["data"][0]))
        return compute(buffers, offsets, no_nulls, n)[0] if n else None
    return run


def _unchanged(f: Callable) -> Callable[[], bool]:
    """Whether ``f`` is still the function a runner was made for: its code, defaults and closure values (a
    runner's call is checked each time; a function without a closure by identity, no key made per call)."""
    key = function_key(f)
    code, defaults, _ = key
    if f.__closure__ is None:
        return lambda: f.__code__ is code and f.__defaults__ is defaults
    return lambda: function_key(f) == key


def _reader(kind: Kind, np_dtype: np.dtype | None) -> Callable[[tuple, int], tuple[Any, Any]]:
    """(data, extra) kernel arguments of an input, from its buffers and the end of its rows (offset + n), as
    inputs.Input makes them on the CPU."""
    if kind in (Kind.UTF8_32, Kind.UTF8_64):
        width = _I32 if kind == Kind.UTF8_32 else _I64

        def strings(buffers: tuple, end: int) -> tuple[Any, Any]:
            return _view(buffers[1], end + 1, width), buffers[2]
        return strings
    if kind == Kind.UTF8_VIEW:
        def views(buffers: tuple, end: int) -> tuple[Any, Any]:
            addresses = np.array([buffers[1], *buffers[2:-1]], _I64)  # the views', then the data buffers'
            return _view(buffers[1], 4 * end, _I32), addresses
        return views
    if np_dtype is None:
        def bits(buffers: tuple, end: int) -> tuple[Any, Any]:
            return _view(buffers[1], (end + 7) >> 3, _U8), 0
        return bits
    element = _U16 if np_dtype == np.float16 else np_dtype  # float16: its bits (the kernel widens them)

    def numbers(buffers: tuple, end: int) -> tuple[Any, Any]:
        return _view(buffers[1], end, element), 0
    return numbers
