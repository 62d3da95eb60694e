"""The fixed kernels (the same for every UDF) that make a string output's Arrow buffers from a launch's (address,
size) pairs while its arena is alive: on the CPU a gather of offsets or views in one pass of rows, and a prepared
call's whole output in one compiled call; on a GPU a gather of whole words, a pipelined range's end in one launch
(scan, offsets, validity, gather), and string_view views. Compiled once per process (kept on disk). The arena and
its sizing are string_results.py's; the chunk's output built range by range string_sink.py's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..compile.strings.meminfo_layout import ArenaWord
from .launch import THREADS

# The CPU and the GPU copy each row's bytes into the Arrow buffers their own way. The CPU in one pass of rows
# (below): each row's bytes by the host's memcpy (``copy_bytes``; the word-assembling writers a GPU needs cost a
# CPU three times as much, 12 against 4 ns a row of 8 bytes), its offset or view written as it goes.
# CPU, string and large_string: the gather and the offsets in one pass, each row's offset written as its bytes
# are copied (no scan of the sizes before, no temporary array of offsets).
_GATHER_OFFSETS_CPU = """
def gather_offsets(n, pairs, offsets, at, total, data_address):
    end = total
    for i in range(n):
        size = pairs[2 * i + 1]
        copy_bytes(data_address + end, pairs[2 * i], size)
        end += size
        offsets[at + i + 1] = end
"""
# CPU, a prepared call's string output in one call after its kernel (prepared_host.HostStringCall: a DuckDB vector
# of 2048 rows spent some 40 us of Python reading the arena's claim, summing the sizes, making the buffers, counting
# and packing the flags): (the arena's claim, offsets, data, validity bitmap (empty: no nulls), null count), the
# null count -1 where the arena overflowed and -2 where the data passes `limit` bytes (the caller's general way
# takes those).
_FINISH_STRINGS_CPU = _GATHER_OFFSETS_CPU + """
def finish_strings(n, pairs, flags, has_flags, state, limit):
    claimed = state[CLAIMED]
    nbytes = 0
    for i in range(n):
        nbytes += pairs[2 * i + 1]
    if claimed > state[CAPACITY] or nbytes > limit:
        refused = -1 if claimed > state[CAPACITY] else -2
        return claimed, np.empty(0, OFFSETS), np.empty(0, np.uint8), np.empty(0, np.uint8), refused
    offsets = np.empty(n + 1, OFFSETS)
    offsets[0] = 0
    data = np.empty(max(nbytes, 1), np.uint8)
    gather_offsets(n, pairs, offsets, 0, 0, np.int64(data.ctypes.data))
    nulls = 0
    if has_flags:
        for i in range(n):
            nulls += flags[i] == 0
    bitmap = np.zeros((n + 7) >> 3 if nulls else 0, np.uint8)
    if nulls:
        for i in range(n):
            if flags[i] != 0:
                bitmap[i >> 3] |= np.uint8(1 << (i & 7))
    return claimed, offsets, data, bitmap, nulls
""".replace("CLAIMED", str(int(ArenaWord.CLAIMED))).replace("CAPACITY", str(int(ArenaWord.CAPACITY)))
# CPU, string_view: each row's view written (_views_body) and, past 12 bytes, its bytes copied to the data
# buffer's end, in one pass.
def _views_body(view: str, long_string: list[str]) -> str:
    """The statements that write row i's string_view view (int32 words ``views[view]`` to ``views[view + 3]``)
    from its pair: the size, then the bytes themselves (12 at most) or their first four and, for a longer string,
    ``long_string`` (its buffer and offset; the words are made signed before they are stored)."""
    lines = ["size = pairs[2 * i + 1]", "source = make_view(pairs[2 * i], size)",
             "low = load_bytes(source, 0, min(size, 8)) if size > 0 else 0",
             f"views[{view}] = size", f"views[{view} + 1] = ((low & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000",
             "if size <= 12:", "    high = load_bytes(source, 8, size - 8) if size > 8 else 0",
             f"    views[{view} + 2] = (((low >> 32) & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000",
             f"    views[{view} + 3] = ((high & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000",
             "else:", *("    " + statement for statement in long_string)]
    return "\n" + "".join(f"        {line}\n" for line in lines)


_GATHER_VIEWS_CPU = """
def gather_views(n, pairs, views, at, buffer, total, data_address):
    end = total
    for i in range(n):
        j = 4 * (at + i)""" + _views_body("j", ["copy_bytes(data_address + end, pairs[2 * i], size)",
                                        "views[j + 2] = buffer", "views[j + 3] = end", "end += size"])
# CUDA: a warp per ROWS rows (a multiple of 32), whose bytes are one contiguous range of the data buffer. Each lane
# assembles whole aligned 8-byte words of that range (lane k the words k, k + 32, ...) from the rows they overlap
# (a binary search of the warp's offsets in shared memory, from the row of the lane's last word on), so every
# store is a full word and a warp's stores are contiguous: a thread per row storing its own bytes made most stores
# partial words, byte by byte where rows meet, and was bound by L2 store transactions. Only the range's first and
# last word, shared with the warps beside it, are stored byte by byte. More rows than 32 a warp keep its lanes
# busy: 32 short rows are some 40 words, which leave most lanes idle in the second round.
GATHER_ROWS = 128
# The words of one warp's rows (STARTS[r]: row r's first byte from `data_address`, STARTS[rows] where the last
# ends; SOURCES[r] its string's address), shared by the gathers below.
_GATHER_WORDS = """
        begin = data_address + STARTS[0]
        end = data_address + STARTS[rows]
        if STARTS[rows] > limit:  # past the buffer's room: the caller sees it and runs the rows again
            end = begin
        word = (begin & ~7) + 8 * lane
        low = 0
        while word < end:
            p = max(word, begin) - data_address
            stop = min(word + 8, end) - data_address
            high = rows
            while high - low > 1:  # the row holding byte p: the last whose start is <= p
                middle = (low + high) >> 1
                if STARTS[middle] <= p:
                    low = middle
                else:
                    high = middle
            value = 0
            shift = p + data_address - word
            at = p
            row = low
            while at < stop:
                while STARTS[row + 1] <= at:  # rows that end before this byte (empty ones)
                    row += 1
                take = min(stop, STARTS[row + 1]) - at
                piece = load_bytes(make_view(SOURCES[row] + at - STARTS[row], take), 0, take)
                value |= piece << (8 * (at - p + shift))
                at += take
            count = stop - p
            if count == 8:  # a whole aligned word (every one but the range's first and last): one store
                store_word(word, value)
            else:
                w = writer_at(data_address + p, count)
                write_finish(write_bytes(w, value >> (8 * shift), count))
            word += 256
""".replace("STARTS[", "starts[warp, ").replace("SOURCES[", "sources[warp, ")
_GATHER_CUDA = """
def gather(n, pairs, offsets, data_address, limit):
    i = cuda.grid(1)
    lane = i & 31
    first = (i >> 5) * ROWS
    if first < n:
        warp = cuda.threadIdx.x >> 5
        starts = cuda.shared.array((WARPS, ROWS + 1), np.int64)
        sources = cuda.shared.array((WARPS, ROWS), np.int64)
        rows = min(ROWS, n - first)
        for r in range(lane, rows, 32):
            starts[warp, r] = offsets[first + r]
            sources[warp, r] = pairs[2 * (first + r)]
        if lane == 0:
            starts[warp, rows] = offsets[first + rows]  # where the warp's last row ends
        cuda.syncwarp()""" + _GATHER_WORDS

# GPU, a pipelined range's end (string_sink.Pipeline) in one launch, with no scan before it: each block (a tile of
# WARPS * ROWS rows, numbered in the order blocks start, so a tile only waits on tiles already running) sums its
# rows' sizes, learns the bytes before it from the tiles before (decoupled look-back: each tile publishes its own
# total at once and, when known, the running total to its end, in one int64 with the range's epoch, so the
# words of an earlier range never pass for this one's), writes its rows' offsets, packs their validity (`pack`:
# the kernel's bytes a row into the output's bitmap from bit `start`, a multiple of 8) and gathers their bytes.
# The last tile writes the data's length after the range (totals[1 - parity]), its flag (the data passed the
# room, or the arena overflowed: claimed > capacity) and empties the arena for the next range (nothing here
# reads the claim but that tile). Three launches before (a scan, the offsets, the gather): the GPU idled some
# 0.1 ms between them each range.
_TILE_VALUE = (1 << 46) - 1
_GATHER_RANGE_CUDA = ("""
def gather_range(n, pairs, totals, parity, out, start, data_address, limit, state, flags, k, row_flags, bitmap,
                 pack, tiles, status, epoch, lengths):
    warp = cuda.threadIdx.x >> 5
    lane = cuda.threadIdx.x & 31
    starts = cuda.shared.array((WARPS, ROWS + 1), np.int64)
    sources = cuda.shared.array((WARPS, ROWS), np.int64)
    before = cuda.shared.array(WARPS, np.int64)  # bytes of the tile's warps before each
    tile_at = cuda.shared.array(2, np.int64)  # the tile's number, the bytes before it
    if cuda.threadIdx.x == 0:
        tile_at[0] = cuda.atomic.add(tiles, k, 1)
    cuda.syncthreads()
    tile = tile_at[0]
    if tile * WARPS * ROWS >= n:  # the grid's spare blocks
        return
    first = (tile * WARPS + warp) * ROWS
    rows = max(min(ROWS, n - first), 0)
    for r in range(lane, ROWS, 32):
        size = 0
        if r < rows:
            size = pairs[2 * (first + r) + 1]
            sources[warp, r] = pairs[2 * (first + r)]
        starts[warp, r + 1] = size
    if lane == 0:
        starts[warp, 0] = 0
    cuda.syncwarp()
    own = 0  # a lane's running sum over its ROWS // 32 rows in a row, then the lanes' sums scanned
    for j in range(ROWS // 32):
        own += starts[warp, lane * (ROWS // 32) + j + 1]
        starts[warp, lane * (ROWS // 32) + j + 1] = own
    total = own
    for delta in (1, 2, 4, 8, 16):
        other = cuda.shfl_up_sync(0xFFFFFFFF, total, delta)
        if lane >= delta:
            total += other
    if lane == 31:
        before[warp] = total
    cuda.syncwarp()
    for j in range(ROWS // 32):
        starts[warp, lane * (ROWS // 32) + j + 1] += total - own
    cuda.syncthreads()
    if warp == 0:  # the tile's bytes, then (tiles after the first) the bytes before it, from up to 32 tiles a step
        tile_bytes = 0
        for w in range(WARPS):
            tile_bytes += before[w]
        stamp = epoch << 48
        prefix = 0
        if tile == 0:
            prefix = totals[parity]
        else:
            if lane == 0:
                cuda.atomic.exch(status, tile, stamp | (1 << 46) | tile_bytes)
            last = tile - 1  # the nearest tile of the window the warp reads, lane j reading tile last - j
            while True:
                word = stamp | (2 << 46)  # before tile 0: nothing
                if last - lane >= 0:
                    word = cuda.atomic.add(status, last - lane, 0)
                if cuda.ballot_sync(0xFFFFFFFF, (word >> 48) == epoch) & 0xFFFFFFFF != 0xFFFFFFFF:
                    continue  # a tile of the window has not published yet
                known = cuda.ballot_sync(0xFFFFFFFF, (word >> 46) & 3 == 2)
                take = word & VALUE  # up to and with the nearest tile whose running total is known
                if known & ((1 << lane) - 1) != 0:
                    take = 0
                for mask in (16, 8, 4, 2, 1):
                    take += cuda.shfl_xor_sync(0xFFFFFFFF, take, mask)
                prefix += take
                if known != 0:
                    break
                last -= 32
        if lane == 0:
            cuda.atomic.exch(status, tile, stamp | (2 << 46) | (prefix + tile_bytes))
            tile_at[1] = prefix
            if (tile + 1) * WARPS * ROWS >= n:  # the range's last tile
                end = prefix + tile_bytes
                totals[1 - parity] = end
                lengths[k] = end  # host memory: read once the range's event has passed
                flags[k] = 1 if end > limit or state[CLAIMED] > state[CAPACITY] else 0
                state[CLAIMED] = 0
        mine = 0  # the bytes of the warps before lane's
        if lane < WARPS:
            for w in range(lane):
                mine += before[w]
        cuda.syncwarp()
        if lane < WARPS:
            before[lane] = mine
    cuda.syncthreads()
    shift_by = tile_at[1] + before[warp]
    for r in range(lane, ROWS + 1, 32):
        starts[warp, r] += shift_by
    cuda.syncwarp()
    for r in range(lane, rows, 32):
        out[start + first + r + 1] = starts[warp, r + 1]
    if pack and lane * 8 < rows:
        byte = 0
        for j in range(min(8, rows - lane * 8)):
            if row_flags[first + lane * 8 + j] != 0:
                byte |= 1 << j
        bitmap[((start + first) >> 3) + lane] = byte
    if rows > 0:""" + _GATHER_WORDS).replace("VALUE", str(_TILE_VALUE)).replace(
    "CLAIMED", str(int(ArenaWord.CLAIMED))).replace("CAPACITY", str(int(ArenaWord.CAPACITY)))

# GPU: string_view views from the kernel's pairs, after the gather put strings of more than 12 bytes at `base` +
# their offset in data buffer `buffer`.
_VIEWS_BODY = _views_body("4 * i", ["views[4 * i + 2] = buffer", "views[4 * i + 3] = base + offsets[i]"])
_VIEWS_SOURCE = {
    "cuda": "def make_views(n, pairs, offsets, views, buffer, base):\n    i = cuda.grid(1)\n    if i < n:" + _VIEWS_BODY,
}

_kernels: dict[tuple[str, str], Any] = {}


def _fixed_kernel(name: str, sources: dict[str, str], entry: str, gpu: bool) -> Any:
    """The compiled kernel ``entry`` of ``sources`` for the target (the same for every UDF: compiled once
    per process, kept on disk)."""
    target = "cuda" if gpu else "cpu"
    kernel = _kernels.get((name, target))
    if kernel is not None:  # every call after the first (a string UDF's gather runs once a range)
        return kernel
    from ..compile import cache
    from ..compile.strings import intrinsics

    namespace = dict(intrinsics()[target], np=np)
    namespace["__name__"] = __name__  # numba finds the compiled code's environment through it
    if gpu:
        from numba import cuda

        namespace.update(cuda=cuda, WARPS=THREADS // 32)
        compiler = cuda.jit
    else:
        import numba

        compiler = numba.njit(nogil=True)  # engines gather from several threads at once (DuckDB)
    before = set(namespace)
    exec(compile(sources[target], f"<arrowdev {name}>", "exec"), namespace)
    for helper in set(namespace) - before - {entry}:  # functions the entry calls, defined beside it
        if callable(namespace[helper]):
            namespace[helper] = compiler(namespace[helper])
    kernel = compiler(namespace[entry])
    kernel._cache = cache.KernelCache(cache.fixed_key((name, target)), target)
    _kernels[(name, target)] = kernel
    return kernel


def _gather(mem: Any, n: int, pairs: Any, offsets: Any, data_address: int, limit: int = 2**62) -> None:
    """GPU: copies each row's bytes to its offset in the data buffer at ``data_address``, eight at a time; rows
    that would end past ``limit`` bytes are not copied (the CPU: :func:`gather_with_offsets`)."""
    gather = _fixed_kernel(f"string gather {GATHER_ROWS}", {"cuda": _GATHER_CUDA.replace("ROWS", str(GATHER_ROWS))},
                           "gather", True)
    mem.launch(gather, n, [pairs, mem.view(offsets.data.ptr, n + 1, np.int64, offsets), np.int64(data_address),
                           np.int64(limit)], GATHER_ROWS // 32)


class RangeBooks(NamedTuple):
    """What a pipeline's ranges keep on the device between launches (string_sink.Pipeline): the data's length
    before and after a range (two slots, alternating), a flag a range, a counter a range numbering its tiles,
    and a word a tile of one range (:data:`_GATHER_RANGE_CUDA`); ``lengths``: each range's data length after it,
    in pinned host memory the kernel writes (no copy queued), as a kernel array."""

    totals: Any
    flags: Any
    tiles: Any
    status: Any
    lengths: Any


# A tile's word carries its range's epoch in bits 48-62: 1 .. EPOCHS, so the words of a range EPOCHS ranges back
# are cleared before theirs comes round again (Pipeline.step)
EPOCHS = (1 << 15) - 1


def tiles_of(rows: int) -> int:
    """Tiles (blocks of :func:`gather_range`) over ``rows`` rows."""
    return -(-rows // (THREADS // 32 * GATHER_ROWS))


def gather_range(mem: Any, b: int, pairs: Any, books: RangeBooks, parity: int, out: Any, start: int,
                 data_address: int, limit: int, state: Any, k: int, validity: tuple[Any, Any] | None = None) -> None:
    """GPU: ends pipelined range ``k`` of ``b`` rows in one launch (``_GATHER_RANGE_CUDA``): offsets, bytes
    gathered to ``data_address``, the data's length after it (on the device, and in ``books.lengths[k]``, pinned
    host memory), its flag, the arena emptied. ``out`` the output's
    offsets (int32 or int64), ``state`` the range's arena state (zeros without one); ``validity``: the kernel's
    bytes a row and the output's bitmap, packed into it (``start`` a multiple of 8); CuPy arrays or kernel
    arrays."""
    wide = out.dtype == np.int64
    source = _GATHER_RANGE_CUDA.replace("ROWS", str(GATHER_ROWS))
    kernel = _fixed_kernel(f"string range gather {GATHER_ROWS} {'int64' if wide else 'int32'}", {"cuda": source},
                           "gather_range", True)

    def kernel_array(a: Any) -> Any:  # a CuPy array as a view kernels take (DeviceViews pass as they are)
        return mem.view(a.data.ptr, a.size, a.dtype, a) if hasattr(a, "data") else a

    if validity is not None and start % 8:
        raise ValueError(f"a range's validity is packed from a whole byte: expected a start that is a multiple "
                         f"of 8, got {start}")
    row_flags, bitmap = validity if validity is not None else (mem.stand_in(np.uint8), mem.stand_in(np.uint8))
    mem.launch(kernel, b, [pairs, kernel_array(books.totals), np.int64(parity), out, np.int64(start),
                           np.int64(data_address), np.int64(limit), kernel_array(state), kernel_array(books.flags),
                           np.int64(k), row_flags, bitmap, np.int64(validity is not None),
                           kernel_array(books.tiles), kernel_array(books.status), np.int64(k % EPOCHS + 1),
                           books.lengths],
               GATHER_ROWS // 32)


def gather_with_offsets(n: int, pairs: Any, offsets: Any, at: int, total: int, data_address: int) -> None:
    """CPU: copies the bytes of rows [0, n) of ``pairs`` after the ``total`` bytes at ``data_address`` and writes
    their ends, ``total`` on, to ``offsets[at + 1 .. at + n]``."""
    kernel = _fixed_kernel("string gather and offsets", {"cpu": _GATHER_OFFSETS_CPU}, "gather_offsets", False)
    kernel(n, pairs, offsets, np.int64(at), np.int64(total), np.int64(data_address))


def finish_strings(large: bool) -> Any:
    """CPU: the compiled ``finish_strings(n, pairs, flags, has_flags, state, limit)`` of ``_FINISH_STRINGS_CPU``,
    for int64 offsets where ``large``, else int32."""
    width = "int64" if large else "int32"
    return _fixed_kernel(f"string output finished {width}", {"cpu": _FINISH_STRINGS_CPU.replace("OFFSETS",
                                                                                                f"np.{width}")},
                         "finish_strings", False)


def gather_views(n: int, pairs: Any, views: Any, at: int, buffer: int, total: int, data_address: int) -> None:
    """CPU: writes the string_view views of rows [0, n) of ``pairs`` to ``views`` from view ``at`` on, and copies
    the bytes of those past 12 bytes after the ``total`` bytes of data buffer ``buffer`` (at ``data_address``)."""
    kernel = _fixed_kernel("string gather of views", {"cpu": _GATHER_VIEWS_CPU}, "gather_views", False)
    kernel(n, pairs, views, np.int64(at), np.int64(buffer), np.int64(total), np.int64(data_address))


def _views(mem: Any, n: int, pairs: Any, offsets: Any, views: Any, buffer: int, base: int) -> None:
    """GPU: writes the string_view views of ``n`` rows (see ``_VIEWS_BODY``; the CPU: :func:`gather_views`)."""
    make_views = _fixed_kernel("string views", _VIEWS_SOURCE, "make_views", True)
    offsets = mem.view(offsets.data.ptr, n + 1, np.int64, offsets)
    mem.launch(make_views, n, [pairs, offsets, views, np.int64(buffer), np.int64(base)])
