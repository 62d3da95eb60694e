"""A string UDF's output built range by range (:class:`StringSink`), host side: each range's strings are gathered
to the data's end while its arena is alive, so the next range reuses the arena. On a GPU, the ranges after the
first are queued without waiting on the host (:class:`Pipeline`): their offsets, the data's running length and
the checks (did a range outgrow its arena, or the data's room?) stay on the device and are read once at the end;
a range that failed a check is run again, with everything after it, the careful way. docs/strings.md
("Memory") has the picture and the measures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import layout
from ...core.types import DataType
from ...gpu import memory as device_memory, runtime
from ..compile.strings.meminfo_layout import STATE_WORDS
from . import string_gathers as gathers, string_results as results
from .string_gathers import _gather, _views
from .string_results import Arena, _address, _as_array, _on, _scalar

__all__ = ["Pipeline", "StringSink"]

# A pipelined range's arena: the claim a row measured (by the first range, or the kernel's last call) times this,
# as execute.batch_rows budgets it; the data's room: its bytes a row times _DATA_MARGIN over the rows the host has
# not seen yet (at most Pipeline.unseen), times _COLUMN_MARGIN over the whole column when the pipeline starts (the
# room grows as ranges are seen, so the slack belongs to the unseen rows: 1.1 over the whole column held 0.07 x the
# output of mapped room unused at 10^8 rows). Together with the ranges' share of the working set they keep a call
# within 1.25 x its output (docs/udf.md, "Memory").
_ARENA_MARGIN = 1.125
_DATA_MARGIN = 1.1
_COLUMN_MARGIN = 1.03


def _passes_int32(data_per_row: float | None, n: int) -> bool:
    """Whether ``n`` rows of ``data_per_row`` bytes are expected to pass what int32 offsets address (with a
    tenth to spare: longer rows later would widen the offsets at the worst moment)."""
    return data_per_row is not None and data_per_row * n > 0.9 * results.STRING_LIMIT


class StringSink:
    """One chunk's string output, built from the kernel's (address, size) pairs one batch of rows at a time:
    each batch's bytes are gathered to the data's end while its arena is still alive, so the arena can be
    reused by the next batch. ``string`` / ``large_string``: offsets (int32, widened to int64 when the data
    passes 2^31 - 1 bytes, or is expected to: the first range's rows or the kernel's last call say so) and one data buffer; ``string_view``: views, with strings of more than 12 bytes
    in data buffers of at most 2 GiB. A chunk of one batch gets exact buffers from the pool; one of several
    a data buffer that grows in place (``Memory.growable``): never the data twice."""

    def __init__(self, mem: Any, n: int, string_type: str, batches: int, data_per_row: float | None = None) -> None:
        self.mem, self.n, self.string_type, self.batches = mem, n, string_type, batches
        self.views = string_type == "string_view"
        # int64 offsets from the start where the kernel's last call says the data will pass what int32 addresses:
        # widening later holds both (4 + 8 bytes a row: 12 GB at 10^9 rows) beside the data made so far
        self.large = string_type == "large_string" or (not self.views and _passes_int32(data_per_row, n))
        if self.views:
            self.out, _, self.out_keep = mem.new(4 * n, np.int32)
        else:
            self.out, _, self.out_keep = mem.new(n + 1, np.int64 if self.large else np.int32)
            if not (mem.gpu and n):  # a GPU's first range writes offsets[0] with its own (StringSink._offsets)
                self._set(self.out, 0, 0)
        self.total = 0  # data bytes so far (string_view: in the current data buffer)
        self.buffers: list[tuple[int, Any]] = []  # (address, owner) of each data buffer
        self.used: list[int] = []  # bytes of each data buffer in use

    def scan(self, pairs: Any, b: int) -> Any:
        """GPU: the running sum of the data bytes of ``b`` rows' strings (``b + 1`` values from 0), queued;
        ``scan[b]`` is their total."""
        mem, cp = self.mem, self.mem.cp
        with mem.on_device():
            kept = _as_array(mem, pairs)[:2 * b]
            sizes = kept[1::2] if not self.views else kept[1::2] * (kept[1::2] > 12)  # inline views keep none
            batch = cp.zeros(b + 1, dtype=np.int64)
            cp.cumsum(sizes, out=batch[1:])
        return batch

    def add(self, pairs: Any, start: int, b: int, scanned: tuple[Any, int] | None = None) -> None:
        """Rows [start, start + b), whose pairs are the first ``2 * b`` of ``pairs`` (their strings still alive).
        ``scanned``: the :meth:`scan` of these rows and its total, where the host read it already (GPU)."""
        mem = self.mem
        if not mem.gpu:  # one pass: each row's bytes copied and its offset (or view) written
            sizes = np.asarray(pairs)[1:2 * b:2]
            nbytes = int(sizes[sizes > 12].sum() if self.views else sizes.sum())  # inline views keep none
            data = self._room(nbytes)
            if self.views:
                gathers.gather_views(b, pairs, self.out, start, len(self.buffers) - 1, self.total, data)
            else:
                gathers.gather_with_offsets(b, pairs, self.out, start, self.total, data)
            self.total += nbytes
            self.used[-1] = self.total
            self._widen_early(start, b)
            return
        if scanned is None:
            batch = self.scan(pairs, b)
            nbytes = _scalar(mem, batch, b)
        else:
            batch, nbytes = scanned
        data = self._room(nbytes)
        _gather(mem, b, pairs, batch, data + self.total)
        if self.views:
            _views(mem, b, pairs, batch, mem.part(self.out, 4 * start, 4 * b), len(self.buffers) - 1, self.total)
        else:
            self._offsets(batch, start, b)
        self.total += nbytes
        self.used[-1] = self.total
        self._widen_early(start, b)

    def _widen_early(self, start: int, b: int) -> None:
        """After a call's first range of rows: int64 offsets now if its rows say the data will pass what int32
        offsets address (the widening then costs the int32 offsets and a range's data, not most of the output)."""
        if start == 0 and b < self.n and not self.large and not self.views and _passes_int32(self.total / b, self.n):
            self.widen()

    def pipeline(self, arena: Arena | None, done: int, rows: int, ranges: int) -> Pipeline | None:
        """The :class:`Pipeline` for the ranges of a GPU chunk after the first ``done`` rows, sized from what
        those rows took; None where they run one by one (on the CPU, for string_view, or for few ranges)."""
        if not self.mem.gpu or self.views or ranges < 3 or self.batches == 1 or not done:
            return None
        arena_per_row = arena.last_claimed / done if arena is not None else None
        return Pipeline(self, arena, arena_per_row, self.total / done, done, rows, ranges)

    def _room(self, nbytes: int) -> int:
        """The address of the data buffer the next ``nbytes`` go to, made or grown for them."""
        if self.views and nbytes > results.WINDOW - 1:
            raise MemoryError(f"a batch of a string_view UDF output made {nbytes} bytes of strings, more than one "
                              "2 GiB data buffer holds: return string or large_string (string_type=)")
        if not self.views and not self.large and self.total + nbytes > results.STRING_LIMIT:
            self.widen()
        if not self.buffers or (self.views and self.total + nbytes > results.WINDOW - 1):
            self.total = 0
            self.used.append(0)
            if self.batches == 1:  # the whole chunk at once: the exact size
                _, address, keep = self.mem.new(max(nbytes, 1), np.uint8)
                self.buffers.append((address, keep))
                return address
            self.buffers.append((0, self.mem.growable(results.WINDOW if self.views else self._reserve())))
        grows = self.buffers[-1][1]
        if hasattr(grows, "grow_to"):
            grows.grow_to(max(self.total + nbytes, 1))
            self.buffers[-1] = (grows.ptr, grows)
        return self.buffers[-1][0]

    def _reserve(self) -> int:
        """Device addresses to reserve for a data buffer: the GPU's memory (more could not be mapped)."""
        if not self.mem.gpu:
            return 0
        with self.mem.cp.cuda.Device(self.mem.device.id):
            return int(self.mem.cp.cuda.runtime.memGetInfo()[1])

    def widen(self) -> None:
        """The data passes what int32 offsets address: the offsets so far become int64 (large_string)."""
        wide, _, keep = self.mem.new(self.n + 1, np.int64)
        with self.mem.on_device():
            _as_array(self.mem, wide)[:self.n + 1] = _as_array(self.mem, self.out)[:self.n + 1]
        self.out, self.out_keep, self.large = wide, keep, True

    def _offsets(self, batch: Any, start: int, b: int) -> None:
        """Offsets [start, start + b] from the rows' scan (which starts at 0): offsets[start] is written again
        with the value the range before wrote, or 0 for the first."""
        with self.mem.on_device():
            target = _as_array(self.mem, self.out)[start:start + b + 1]
            target[...] = batch + self.total if self.total else batch

    def _set(self, array: Any, index: int, value: int) -> None:
        with self.mem.on_device():
            _as_array(self.mem, array)[index] = value

    def nbytes_per_row(self, done: int) -> float:
        """Output bytes a row of the first ``done`` rows made: their data, and an offset or view each."""
        return self.total / done + (16 if self.views else 8 if self.large else 4)

    def nbytes(self) -> int:
        """Bytes of the output's buffers: the data, and the offsets or views."""
        return sum(self.used) + (16 * self.n if self.views else (8 if self.large else 4) * (self.n + 1))

    def finish(self, keep: list[Any]) -> tuple[DataType, list[int]]:
        """(Arrow type, buffers after the validity); appends what the array holds on to to ``keep``."""
        import pyarrow as pa

        if not self.buffers:  # no rows: an empty data buffer
            self._room(0)
        keep += [self.out_keep, *(owner for _, owner in self.buffers)]
        out = _address(self.mem, _as_array(self.mem, self.out))
        if self.views:
            sizes = _on(self.mem, np.array(self.used, dtype=np.int64))
            keep.append(sizes)
            return DataType.from_arrow(pa.string_view()), [out, *(a for a, _ in self.buffers), _address(self.mem, sizes)]
        if self.mem.gpu:
            self._remember_ends(out)
        return DataType.from_arrow(pa.large_string() if self.large else pa.string()), [out, self.buffers[0][0]]

    def _remember_ends(self, out: int) -> None:
        """GPU: the offsets' first and last values are known here; recorded (layout.remember), planning the
        output's frames or copies, or Dask's ``sizeof`` of it, reads nothing from the device and waits for no
        kernel (docs/distributed.md, "host cost a task")."""
        width = 8 if self.large else 4
        layout.remember([(out, bytes(width)), (out + width * self.n, self.total.to_bytes(width, "little"))],
                        self.out_keep)


class Pipeline:
    """The ranges after the first of a GPU chunk, queued back to back: one arena sized from the first range's
    claim, offsets computed on the device from a running length there, and per range a flag: its arena
    overflowed, or its data passed the room (or int32 offsets). :meth:`settle` reads the flags once; the first
    flagged range and those after it run again.

    The data's room is mapped for every row at the first range's rate (3% to spare), and grown as
    the ranges are queued where the rows measured since need more: each range's kernel writes its running length
    to pinned host memory (no copy queued, no wait), and the host never runs more than ``unseen`` rows past the
    last length it has seen. So longer rows later in the column grow the room before the ranges that need it run,
    rather than failing their check and running again."""

    _AHEAD = 4  # ranges queued (and mapped, when the room grows) ahead of the last one seen

    def __init__(self, sink: StringSink, arena: Arena | None, arena_per_row: float | None, data_per_row: float,
                 done: int, rows: int, ranges: int) -> None:
        mem, cp = sink.mem, sink.mem.cp
        self.sink, self.mem, self.cp = sink, mem, cp
        self.arena = arena
        if arena_per_row is not None:
            need = int(arena_per_row * rows * _ARENA_MARGIN) + (64 << 10)
            self.arena = arena if arena is not None and arena.capacity >= need else Arena(mem, need)
        if self.arena is not None:  # emptied here once; each range's gather_range empties it for the next
            self.arena.reset()
        if not sink.buffers:
            sink._room(0)
        self.grows = sink.buffers[-1][1]
        self.base = self.grows.ptr
        # rows queued past the last running length the host has seen, at most (the GPU kept busy meanwhile): the
        # rate a row's data is mapped at goes unchecked over them
        self.unseen = max(self._AHEAD * rows, sink.n // 16)
        self.rate = data_per_row
        # room for every row at the first range's rate, in one growth (a few driver calls): the ranges grow it
        # further only where their rows take more
        self.grows.grow_to(sink.total + int(data_per_row * (sink.n - done) * _COLUMN_MARGIN) + (2 << 20))
        self.start = self.known = (done, sink.total)  # (rows, data bytes) at the start, and the host has seen so far
        self.seen: list[tuple[int, Any]] = []  # (rows done, event) per range queued, oldest first
        self.lengths = cp.cuda.alloc_pinned_memory(8 * ranges)
        self.lengths_view = np.frombuffer(self.lengths, dtype=np.int64, count=ranges)
        with mem.on_device():
            self.books = gathers.RangeBooks(totals=cp.full(2, sink.total, dtype=np.int64),
                                            flags=cp.zeros(ranges, dtype=np.int8),
                                            tiles=cp.zeros(ranges, dtype=np.int64),
                                            status=cp.zeros(gathers.tiles_of(rows), dtype=np.int64),
                                            lengths=mem.view(self.lengths.ptr, ranges, np.int64, self.lengths))
            self.no_arena = cp.zeros(STATE_WORDS, dtype=np.int64)  # an arena state that never overflows
        self.parity = 0  # totals[parity]: the length before the next range

    def _learn(self, k: int, end: int) -> None:
        """Takes in the running lengths of the ranges that have completed, waiting for the oldest while the rows
        up to ``end`` (range ``k``'s) would be more than ``unseen`` past the last one seen."""
        while self.seen:
            rows, event = self.seen[0]
            if not event.done:
                if end - self.known[0] <= self.unseen:
                    break
                event.synchronize()
            index = k - len(self.seen)
            self.seen.pop(0)
            known_rows, known_bytes = self.known
            self.known = (rows, int(self.lengths_view[index]))
            if rows > known_rows:  # the rows since the last length seen, or all so far if their rows took more
                first_rows, first_bytes = self.start
                self.rate = max((self.known[1] - known_bytes) / (rows - known_rows),
                                (self.known[1] - first_bytes) / (rows - first_rows))

    def _room(self, end: int, b: int) -> int:
        """Maps the data's room for the rows up to ``end`` (as the bytes a row measured say), and when it has to
        grow, for up to ``_AHEAD`` ranges of ``b`` rows more (each growth is a few driver calls that take the
        host longer than queueing a range); the limit a range ending at ``end`` is checked against."""
        rows, nbytes = self.known
        need = nbytes + int(self.rate * (end - rows) * _DATA_MARGIN) + (2 << 20)
        if need > self.grows.mapped:
            ahead = min(end + min(self._AHEAD * b, self.unseen), self.sink.n)
            self.grows.grow_to(nbytes + int(self.rate * (ahead - rows) * _DATA_MARGIN) + (2 << 20))
        return self.grows.mapped if self.sink.large else min(self.grows.mapped, results.STRING_LIMIT)

    def step(self, k: int, start: int, b: int, launch: Any, pairs: Any, validity: tuple[Any, Any] | None) -> None:
        """Range ``k`` (rows [start, start + b), ``start`` a multiple of 8 as every range's is): launched, its
        checks flagged, its bytes gathered, its offsets written, and where ``validity`` (the kernel's bytes a row,
        the output's bitmap) its rows' validity packed; nothing read back."""
        self._learn(k, start + b)
        limit = self._room(start + b, b)
        launch(self.arena)
        cp, mem = self.cp, self.mem
        with mem.on_device():
            event = cp.cuda.Event(disable_timing=True)  # an event belongs to the device current when it is made
            if k and k % gathers.EPOCHS == 0:  # the tiles' words come round to an epoch used before
                self.books.status.fill(0)
        state = self.arena.state if self.arena is not None else self.no_arena
        gathers.gather_range(mem, b, pairs, self.books, self.parity, self.sink.out, start, self.base, limit, state,
                             k, validity)
        self.parity ^= 1
        event.record(mem.stream)
        self.seen.append((start + b, event))

    def abandon(self) -> None:
        """An error left the ranges queued: the pinned block their kernels write their lengths to is kept until
        those kernels ran (``settle`` waits for them; freed before, the pool would hand it out while they write)."""
        device_memory.keep_until(runtime.SyncEvent(self.mem.stream, self.mem.device.id), self.lengths)

    def settle(self, starts: list[int]) -> int | None:
        """Reads the flags: None when every range held, else the index of the first that did not (the sink is
        set back to that range's start, to run it and the rest again)."""
        flags = self.books.flags.get(stream=self.mem.stream)
        bad = np.flatnonzero(flags)
        sink = self.sink
        if not len(bad):
            sink.total = sink.used[-1] = int(self.books.totals[self.parity].get(stream=self.mem.stream))
            return None
        k = int(bad[0])
        sink.total = sink.used[-1] = _scalar(self.mem, _as_array(self.mem, sink.out), starts[k])
        return k
