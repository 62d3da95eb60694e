"""String results of UDFs, host side: the arena a launch allocates managed strings from (and its sizing
policy), the re-run when it overflows, and what a kernel's last calls made (the sizes the next call starts
from). The kernels that gather the strings into Arrow buffers are string_gathers.py's; outside ``strings/``,
which holds the numba extensions compiled code uses.

Lifecycle of one chunk (docs/strings.md has the picture):

1. An ``Arena``: ``capacity`` bytes from arrowdev's pool and its state (base, capacity, claimed, unused).
   The capacity is a guess: what this kernel needed per row last time, else twice the input bytes plus
   96 bytes per row.
2. The kernel runs; every new string claims a MemInfo block with one atomic add (``managed.py``).
3. The host reads the claimed count. Past the capacity, some strings came back empty: the arena is dropped
   and the launch re-run with one as large as the count says (more if that was not enough, at most
   ``MAX_RUNS`` runs, then ``MemoryError``). Nothing is ever truncated.
4. Materialisation (string_gathers.py). ``string`` / ``large_string``: sizes, a scan into offsets, a gather of
   each row's bytes into one data buffer (switching to ``large_string`` when the data passes 2^31 - 1 bytes); the
   arena goes back to the pool as soon as the gather is queued, in stream order (the pool hands the block
   only to work queued after the gather on the same stream), before the output is returned.
   ``string_view``: the kernel wrote the views itself, pointing into the arena, which becomes the array's variadic buffers (2 GiB windows) and lives
   as long as the array: its release frees the arena and every MemInfo in it.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ...gpu import runtime
from .buffers import host_address
from ..compile.strings.meminfo_layout import (ALLOCATOR_ARENA, ALLOCATOR_DEVICE_MALLOC, CPU_HEADER, HEADER, STATE_WORDS,
                                              ArenaWord, MemInfo, block_bytes)

MAX_RUNS = 6
WINDOW = 1 << 31  # string_view buffer offsets are int32
STRING_LIMIT = 2**31 - 1  # most data bytes a `string` (int32 offsets) holds; past it the output is large_string
# Launches of fewer rows say little about the next (Polars' planning call runs the kernel on two rows of stand-in
# values, "" for strings, before every query: learning from it made the 10^6-row launch after it outgrow its arena
# and run twice): only launches of at least this many rows set what a row takes.
LEARN_ROWS = 1024
_bytes_per_row: dict[Any, float] = {}
_output_per_row: dict[Any, tuple[float, float]] = {}
_stats_lock = threading.Lock()
_stats = {"arenas_live": 0, "arena_bytes_live": 0, "meminfos_made": 0, "meminfos_released": 0, "reruns": 0}
check_meminfos = False  # tests: walk every arena after its launch (counts MemInfos, checks NRT's counts)
# Benchmarks only: allocate each new string with NRT's MemInfo_alloc (device malloc), the cuDF design, instead
# of the arena. NRT frees each string when its count reaches zero inside the kernel, so the output's bytes
# are not valid: it measures the allocation pattern, nothing else. CUDA only.
device_malloc_for_benchmarks = False


class ArenaOverflowError(MemoryError):
    """The UDF kept needing more arena than the last run had, ``MAX_RUNS`` times."""


def managed_string_stats() -> dict[str, int]:
    """Live arenas and their bytes, MemInfos made and released (counted when ``check_meminfos`` is on),
    and launches re-run because an arena overflowed."""
    with _stats_lock:
        return dict(_stats)


def _count(**changes: int) -> None:
    with _stats_lock:
        for key, change in changes.items():
            _stats[key] += change


class Arena:
    """``capacity`` bytes for one launch's managed strings, and the state the kernel allocates through."""

    def __init__(self, mem: Any, capacity: int) -> None:
        self.mem, self.capacity, self.meminfos, self.last_claimed = mem, capacity, 0, 0
        self.shelved = False  # kept between calls, out of the live counts (:meth:`shelve`)
        _, self.base, self._bytes = mem.scratch(max(capacity, 1), np.uint8)
        allocator = ALLOCATOR_DEVICE_MALLOC if device_malloc_for_benchmarks and mem.gpu else ALLOCATOR_ARENA
        words = [0] * STATE_WORDS  # CLAIMED starts at 0
        words[ArenaWord.BASE], words[ArenaWord.CAPACITY], words[ArenaWord.ALLOCATOR] = self.base, capacity, allocator
        self.state = _on(mem, np.array(words, dtype=np.int64))
        self.state_address = _address(mem, self.state)
        _count(arenas_live=1, arena_bytes_live=capacity)

    def reset(self) -> None:
        """Empties the arena for the next launch (queued in stream order, after the work reading it)."""
        if self.mem.gpu:
            with self.mem.on_device():
                self.state[ArenaWord.CLAIMED] = 0
        else:
            self.state[ArenaWord.CLAIMED] = 0

    def check_meminfos(self, used: int) -> None:
        """Walks the blocks: every MemInfo must be back at a count of one, the arena's own reference, so
        NRT's increfs and decrefs balanced. Raises ``AssertionError`` naming the first that did not."""
        raw = _host_bytes(self.mem, self.base, used)
        at, walked = 0, 0
        header_bytes = HEADER if self.mem.gpu else CPU_HEADER
        while at < used:
            header = raw[at:at + header_bytes].view(np.int64)
            if self.mem.gpu:
                refct, size = int(header[MemInfo.REFCT]), int(header[MemInfo.SIZE])
                if refct != 1:
                    raise AssertionError(f"MemInfo at arena offset {at} has reference count {refct}, expected 1")
            else:  # CPU blocks hold their size alone: strings are not counted there (strings/managed.py)
                size = int(header[0])
            if not 0 <= size <= used - at - header_bytes:
                raise AssertionError(f"block at arena offset {at} says {size} bytes, past the {used} bytes claimed")
            at += block_bytes(size, self.mem.gpu)
            walked += 1
        self.meminfos += walked  # an arena reused by the next batch counts each launch's once
        _count(meminfos_made=walked)

    def shelve(self) -> None:
        """Kept for a later call once its strings are copied out (a prepared CPU call keeps one per thread): not
        counted live meanwhile (``debug.leak_check`` counts the arenas of calls under way), until
        :meth:`unshelve`, or released as it is when dropped from the shelf."""
        self._counted_out()
        self.shelved = True

    def count_released(self) -> None:
        """A shelved arena reused by a launch that gives it straight back (a prepared call): the MemInfos walked
        since (tests' ``check_meminfos``) counted released now, as the arena stays out of the live counts."""
        if self.meminfos:
            _count(meminfos_released=self.meminfos)
            self.meminfos = 0

    def unshelve(self) -> None:
        """Taken off the shelf by the call that reuses it: counted live again."""
        _count(arenas_live=1, arena_bytes_live=self.capacity)
        self.shelved = False

    def _counted_out(self) -> None:
        """Out of the live counts, its MemInfos counted released (each launch's once)."""
        _count(arenas_live=-1, arena_bytes_live=-self.capacity, meminfos_released=self.meminfos)
        self.meminfos = 0

    def __del__(self) -> None:
        if not self.shelved:
            self._counted_out()


def _on(mem: Any, values: np.ndarray) -> Any:
    """``values`` on the chunk's device (a CuPy array on a GPU, the NumPy array itself on the CPU)."""
    if not mem.gpu:
        return values
    with mem.on_device():
        return mem.cp.asarray(values)


def _scalar(mem: Any, array: Any, index: int) -> int:
    """``array[index]`` on the host, after the chunk's stream has run up to here."""
    return read_scalars(mem, [(array, index)])[0]


def read_scalars(mem: Any, items: list[tuple[Any, int]]) -> list[int]:
    """``array[index]`` for each (array, index), on the host after the chunk's stream has run up to here: on a
    GPU in one wait for all of them."""
    if not mem.gpu:
        return [int(array[index]) for array, index in items]
    sizes = [array.dtype.itemsize for array, _ in items]
    raw = runtime.read_many([(array.data.ptr + size * index, size) for (array, index), size in zip(items, sizes)],
                            mem.device.id, mem.stream)
    return [int(np.frombuffer(data, array.dtype)[0]) for data, (array, _) in zip(raw, items)]


def _address(mem: Any, array: Any) -> int:
    return array.data.ptr if mem.gpu else host_address(array)


def _host_bytes(mem: Any, address: int, nbytes: int) -> np.ndarray:
    if not mem.gpu:
        return np.frombuffer(ctypes.string_at(address, nbytes), dtype=np.uint8)
    out = np.empty(nbytes, dtype=np.uint8)
    mem.stream.synchronize()
    mem.cp.cuda.runtime.memcpy(out.ctypes.data, address, nbytes, mem.cp.cuda.runtime.memcpyDeviceToHost)
    return out


def initial_capacity(key: Any, n: int, input_bytes: int) -> int:
    per_row = _bytes_per_row.get(key)
    if per_row is None:
        return 2 * input_bytes + 96 * n
    return int(per_row * n * 1.125) + 4096


def arena_held(key: Any, arena: Arena, claimed: int, n: int, allocates: bool = True) -> None:
    """After a launch of ``n`` rows whose strings the arena held (``claimed`` bytes): what a row took is learned
    (from launches of at least LEARN_ROWS rows), and the MemInfos walked where tests ask."""
    arena.last_claimed = claimed
    if allocates and n >= LEARN_ROWS and not device_malloc_for_benchmarks:
        _bytes_per_row[key] = claimed / n
    if check_meminfos:
        arena.check_meminfos(claimed)


def launch_with_arena(key: Any, launch: Any, mem: Any, n: int, input_bytes: int, allocates: bool,
                      reuse: Arena | None = None, reads: Any = None, outgrown: int = 0) -> Arena:
    """Runs ``launch(arena)`` until the arena held everything; returns that arena. ``reuse``: the arena of
    the batch before, taken again (its strings are no longer needed: work queued after theirs overwrites
    them) when it is large enough. ``reads`` (a GPU): what else the host needs of each launch, read in the same
    wait as the arena's claim: ``reads.queue()`` queues work after the launch and names the device values to
    read, ``reads.took(values)`` gets them after the launch that held. ``outgrown``: the claim of a launch of the
    same rows that already overflowed an arena (the first run is sized from it, as a re-run here is)."""
    capacity = initial_capacity(key, n, input_bytes) if allocates else 0
    if outgrown:
        capacity = max(capacity, outgrown + outgrown // 8)
    for run in range(MAX_RUNS):
        if reuse is not None and reuse.capacity >= capacity:
            arena, reuse = reuse, None
            arena.reset()
        else:
            arena = Arena(mem, capacity)
        launch(arena)
        wanted = reads.queue() if reads is not None else []
        if allocates:
            claimed, *values = read_scalars(mem, [(arena.state, ArenaWord.CLAIMED), *wanted])
        else:
            claimed, values = 0, read_scalars(mem, wanted) if wanted else []
        arena.last_claimed = claimed
        if claimed <= arena.capacity:
            if reads is not None:
                reads.took(values)
            arena_held(key, arena, claimed, n, allocates)
            return arena
        _count(reruns=1)
        capacity = max(claimed + claimed // 8, 2 * arena.capacity)
    raise ArenaOverflowError(f"a string UDF kept outgrowing its arena ({capacity} bytes after {MAX_RUNS} runs): "
                             "expected it to make the same strings each time it runs")


def bytes_per_row(key: Any) -> float | None:
    """Arena bytes a row of this kernel claimed in its last launch (None before its first)."""
    return _bytes_per_row.get(key)


def remember_output(key: Any, nbytes: int, data: int, n: int) -> None:
    """Records the output bytes a row of this kernel made: all its buffers, and its string data alone."""
    if n:
        _output_per_row[key] = (nbytes / n, data / n)


def output_per_row(key: Any) -> tuple[float, float] | None:
    """(Output bytes, string data bytes) a row of this kernel made in its last call (None before its first)."""
    return _output_per_row.get(key)


def _as_array(mem: Any, kernel_array: Any) -> Any:
    return mem.cp.asarray(kernel_array) if mem.gpu else kernel_array
