"""The checks of values inside received frames, after node_checks.py has made sure that each frame holds the
elements a check reads: null counts against the validity bitmap, offsets in order and within their target,
dictionary indices, binary views, list views, run ends and union ids.

Two implementations of one interface. :class:`HostValues` checks frames in host memory with the native core
(capsules/values.c: one read of each buffer, vectorised), raising at the first bad value, whose index it names.
:class:`ArrayValues` checks frames with array operations of an array module: CuPy for device frames (the checks
run on the GPU, and :meth:`ArrayValues.finish` reads all their results back in one synchronisation), NumPy in
the tests that hold it to :class:`HostValues` on the same inputs.

A frame here is ``(address, size, on a device)``; every method names the node and buffer it checks (``where``)
in its refusal.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Callable, ContextManager

import numpy as np

from .. import _capsules
from ..errors import InvalidArrowError

Frame = tuple[int, int, bool]
_NO_TYPE = -1  # a union type code that is not one of the union's

_INT_TYPES = {(1, True): np.int8, (2, True): np.int16, (4, True): np.int32, (8, True): np.int64,
              (1, False): np.uint8, (2, False): np.uint16, (4, False): np.uint32, (8, False): np.uint64}


def refuse(where: object, expected: str, got: Any) -> InvalidArrowError:
    """The one error of a refused receipt (frames, CUDA IPC descriptions): where (node path, frame or handle,
    buffer), what was expected, what came."""
    return InvalidArrowError(f"arrowdev refused received data: {where}: expected {expected}, got {got}")


def union_lengths(codes: tuple[int, ...], child_lengths: list[int]) -> np.ndarray:
    """Per type id (0..127), the length of the child it selects, or -1 where it is not a type code."""
    lengths = np.full(128, _NO_TYPE, np.int64)
    lengths[list(codes)] = child_lengths
    return lengths


class HostValues:
    """The checks on frames in host memory, done at once by the native core."""

    def scope(self) -> ContextManager[Any]:
        """What the checks run inside (:func:`~arrowdev.core.node_checks.check_columns` enters it): nothing here."""
        return contextlib.nullcontext()

    def nulls(self, where: str, bitmap: Frame, bit_offset: int, length: int, expected: int) -> None:
        nulls = length - _capsules.count_set(bitmap[0], bit_offset, length)
        if nulls != expected:
            raise refuse(where, f"a null count of {expected} (the header's)", f"{nulls} nulls in the validity bitmap")

    def offsets(self, where: str, frame: Frame, width: int, start: int, count: int, low: int, high: int,
                target: str) -> None:
        bad = _capsules.check_offsets(frame[0] + start * width, width, count, low, high)
        if bad >= 0:
            values = _ints(frame, width, True, start, count)
            raise refuse(where, f"offsets in order within [{low}, {high}] ({target})",
                         f"{int(values[bad])} at offset {start + bad}")

    def indices(self, where: str, frame: Frame, width: int, signed: bool, start: int, count: int, limit: int,
                validity: Frame | None, bit_offset: int) -> None:
        bad = _capsules.check_indices(frame[0] + start * width, width, int(signed), count, limit,
                                      validity[0] if validity else 0, bit_offset)
        if bad >= 0:
            value = int(_ints(frame, width, signed, start + bad, 1)[0])
            raise refuse(where, f"dictionary indices in [0, {limit}) (the dictionary's length)",
                         f"{value} at row {start + bad}")

    def views(self, where: str, frame: Frame, start: int, count: int, sizes: np.ndarray,
              validity: Frame | None, bit_offset: int) -> None:
        sizes = np.ascontiguousarray(sizes, np.int64)
        bad = _capsules.check_views(frame[0] + 16 * start, count, sizes.ctypes.data, sizes.size,
                                    validity[0] if validity else 0, bit_offset)
        if bad >= 0:
            view = _ints(frame, 4, True, 4 * (start + bad), 4).tolist()
            raise refuse(where, f"views within their {sizes.size} data buffers of {sizes.tolist()} bytes",
                         f"the view (length, prefix, buffer, offset) {view} at row {start + bad}")

    def list_views(self, where: str, offsets: Frame, sizes: Frame, width: int, start: int, count: int,
                   limit: int) -> None:
        bad = _capsules.check_list_views(offsets[0] + start * width, sizes[0] + start * width, width, count, limit)
        if bad >= 0:
            pair = (int(_ints(offsets, width, True, start + bad, 1)[0]), int(_ints(sizes, width, True, start + bad, 1)[0]))
            raise refuse(where, f"list views (offset, size) within the child's {limit} rows",
                         f"{pair} at row {start + bad}")

    def run_ends(self, where: str, frame: Frame, width: int, start: int, count: int, end: int) -> None:
        bad = _capsules.check_run_ends(frame[0] + start * width, width, count, end)
        if bad >= 0:
            got = int(_ints(frame, width, True, start + bad, 1)[0]) if count else "no run"
            raise refuse(where, f"run ends above 0, increasing, the last at least {end}",
                         f"{got} at run {bad}")

    def union(self, where: str, ids: Frame, offsets: Frame | None, start: int, count: int,
              lengths: np.ndarray) -> None:
        bad = _capsules.check_union(ids[0] + start, offsets[0] + 4 * start if offsets else 0, count,
                                    lengths.ctypes.data)
        if bad >= 0:
            type_id = int(_ints(ids, 1, True, start + bad, 1)[0])
            child_length = int(lengths[type_id]) if type_id >= 0 else _NO_TYPE
            if child_length < 0:
                codes = np.flatnonzero(lengths >= 0).tolist()
                raise refuse(where, f"type ids among the type codes {codes}", f"type id {type_id} at row {start + bad}")
            offset = int(_ints(offsets, 4, True, start + bad, 1)[0]) if offsets else 0
            raise refuse(where, f"dense union offsets within the selected child's {child_length} rows, each "
                         "child's in order", f"offset {offset} at row {start + bad}")

    def last_offset(self, frame: Frame, width: int, index: int) -> int:
        """An offset (in a frame checked to hold it): the size a string node's data needs."""
        return int.from_bytes(ctypes.string_at(frame[0] + index * width, width), "little", signed=True)

    def variadic_sizes(self, frame: Frame, count: int) -> np.ndarray:
        """The declared sizes of a view array's data buffers (host memory: read in place)."""
        return _ints(frame, 8, True, 0, count)

    def finish(self) -> None:
        """Nothing pending: every check has run."""


def _ints(frame: Frame, width: int, signed: bool, start: int, count: int) -> np.ndarray:
    """``count`` integers of a host frame from element ``start`` (a copy, for messages and small reads)."""
    raw = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * (count * width)).from_address(frame[0] + start * width))
    return raw.view(_INT_TYPES[width, signed]).copy()


class ArrayValues:
    """The same checks with an array module ``xp`` over frames it can view (``view(frame, dtype, start, count)``):
    each check leaves a flag, and :meth:`finish` reads them back at once and raises for the first set one (the
    message then names the check, not the row: finding the row would cost another pass, for a refused receipt)."""

    def __init__(self, xp: Any, view: Callable[[Frame, Any, int, int], Any],
                 scope: Callable[[], ContextManager[Any]] = contextlib.nullcontext) -> None:
        self.xp, self.view, self._scope = xp, view, scope
        self.pending: list[tuple[Any, Callable[[], InvalidArrowError]]] = []

    def scope(self) -> ContextManager[Any]:
        """What the checks run inside: for CuPy, the frames' GPU and arrowdev's stream there (outside one, CuPy
        would queue them on CUDA's legacy stream of the current GPU, and refuse frames of another GPU)."""
        return self._scope()

    def _flag(self, bad: Any, error: Callable[[], InvalidArrowError]) -> None:
        self.pending.append((bad, error))

    def _valid(self, validity: Frame | None, bit_offset: int, count: int) -> Any:
        if validity is None:
            return None
        first = bit_offset // 8
        packed = self.view(validity, np.uint8, first, (bit_offset + count + 7) // 8 - first)
        bits = self.xp.unpackbits(packed, bitorder="little")
        return bits[bit_offset % 8:bit_offset % 8 + count].astype(bool)

    def nulls(self, where: str, bitmap: Frame, bit_offset: int, length: int, expected: int) -> None:
        valid = self._valid(bitmap, bit_offset, length)
        nulls = length - valid.sum(dtype=np.int64)
        self._flag(nulls != expected, lambda: refuse(where, f"a null count of {expected} (the header's)",
                                                     "another number of nulls in the validity bitmap"))

    def offsets(self, where: str, frame: Frame, width: int, start: int, count: int, low: int, high: int,
                target: str) -> None:
        o = self.view(frame, _INT_TYPES[width, True], start, count).astype(np.int64)  # bounds past int32's too
        bad = (o[0] < low) | (o[-1] > high) | (o[1:] < o[:-1]).any()
        self._flag(bad, lambda: refuse(where, f"offsets in order within [{low}, {high}] ({target})",
                                       "offsets out of order or out of range"))

    def indices(self, where: str, frame: Frame, width: int, signed: bool, start: int, count: int, limit: int,
                validity: Frame | None, bit_offset: int) -> None:
        # as int64: a limit past the index type's range compares right, and uint64 past int64's is negative: bad
        values = self.view(frame, _INT_TYPES[width, signed], start, count).astype(np.int64)
        bad = (values < 0) | (values >= limit)
        valid = self._valid(validity, bit_offset, count)
        self._flag((bad if valid is None else bad & valid).any(),
                   lambda: refuse(where, f"dictionary indices in [0, {limit}) (the dictionary's length)",
                                  "an index out of range"))

    def views(self, where: str, frame: Frame, start: int, count: int, sizes: np.ndarray,
              validity: Frame | None, bit_offset: int) -> None:
        xp = self.xp
        v = self.view(frame, np.int32, 4 * start, 4 * count).reshape(count, 4).astype(np.int64)
        length, buffer, offset = v[:, 0], v[:, 2], v[:, 3]
        limits = xp.asarray(np.append(np.asarray(sizes, np.int64), -1))  # a buffer index out of range: -1 bytes
        chosen = limits[xp.where((buffer >= 0) & (buffer < len(sizes)), buffer, len(sizes))]
        bad = (length < 0) | ((length > 12) & ((offset < 0) | (offset + length > chosen)))
        valid = self._valid(validity, bit_offset, count)
        self._flag((bad if valid is None else bad & valid).any(),
                   lambda: refuse(where, f"views within their {len(sizes)} data buffers", "a view out of range"))

    def list_views(self, where: str, offsets: Frame, sizes: Frame, width: int, start: int, count: int,
                   limit: int) -> None:
        o = self.view(offsets, _INT_TYPES[width, True], start, count).astype(np.int64)
        s = self.view(sizes, _INT_TYPES[width, True], start, count).astype(np.int64)
        bad = ((o < 0) | (s < 0) | (o > limit) | (s > limit - o)).any()
        self._flag(bad, lambda: refuse(where, f"list views (offset, size) within the child's {limit} rows",
                                       "a list view out of range"))

    def run_ends(self, where: str, frame: Frame, width: int, start: int, count: int, end: int) -> None:
        if count == 0:
            if end > 0:
                raise refuse(where, f"runs up to row {end}", "no run")
            return
        e = self.view(frame, _INT_TYPES[width, True], start, count).astype(np.int64)
        bad = (e[0] <= 0) | (e[-1] < end) | (e[1:] <= e[:-1]).any()
        self._flag(bad, lambda: refuse(where, f"run ends above 0, increasing, the last at least {end}",
                                       "run ends out of order or short"))

    def union(self, where: str, ids: Frame, offsets: Frame | None, start: int, count: int,
              lengths: np.ndarray) -> None:
        xp = self.xp
        type_ids = self.view(ids, np.int8, start, count).astype(np.int64)
        table = xp.asarray(lengths)
        child_length = table[xp.where(type_ids >= 0, type_ids, 0)]
        bad = (type_ids < 0) | (child_length < 0)
        bad = bad.any()
        if offsets is not None:
            o = self.view(offsets, np.int32, start, count).astype(np.int64)
            bad = bad | ((o < 0) | (o >= child_length)).any()
            for code in np.flatnonzero(lengths >= 0).tolist():  # each child's offsets in order (a few children)
                mine = o[type_ids == code]
                bad = bad | (mine[1:] < mine[:-1]).any()
        self._flag(bad, lambda: refuse(where, "type ids among the union's type codes, dense offsets within the "
                                       "selected child, each child's in order", "a type id or an offset out of "
                                       "range or out of order"))

    def last_offset(self, frame: Frame, width: int, index: int) -> None:
        """Not read from a device (a synchronisation): :meth:`offsets` bounds it with the others."""
        return None

    def variadic_sizes(self, frame: Frame, count: int) -> np.ndarray:
        """The declared sizes of a view array's data buffers, read back (a view array has a few)."""
        sizes = self.view(frame, np.int64, 0, count)
        return np.asarray(sizes.get() if hasattr(sizes, "get") else sizes)

    def finish(self) -> None:
        """Reads every flag back (one synchronisation for all) and raises for the first that is set."""
        if not self.pending:
            return
        flags = self.xp.stack([self.xp.asarray(bad).reshape(()) for bad, _ in self.pending])
        flags = flags.get() if hasattr(flags, "get") else np.asarray(flags)
        for flag, (_, error) in zip(flags.tolist(), self.pending):
            if flag:
                raise error()
        self.pending.clear()


class SizesOnly:
    """No value is read: the frames are not mapped yet (CUDA IPC before ``cudaIpcOpenMemHandle``). Checking a
    header with it checks everything but the values; the values are checked once the memory is mapped, where
    ``wanted`` says the walk came to any (a header of numbers without nulls has none: no second walk then)."""

    def __init__(self) -> None:
        self.wanted = False

    def _later(self, *args: Any) -> None:
        self.wanted = True
        return None

    def scope(self) -> ContextManager[Any]:
        return contextlib.nullcontext()

    nulls = offsets = indices = views = list_views = run_ends = union = last_offset = variadic_sizes = _later

    def finish(self) -> None:
        return None
