"""The internal layer under the user objects: a column's chunks and what the layers beside it do with
them (null counts, reading memory after the producers' events, slicing, alignment, arrays ready to
export), so that ``cuda/``, ``interop/``, ``udf/`` and ``_serialize`` never import ``column.py`` or
``table.py`` nor read their private state.

A column's state lives in its native base, ``_capsules.ColumnCore`` (capsules/py_column.c): a type
(:class:`~arrowdev.core.types.DataType`), its chunks (a list of held arrays, ``CDeviceArray``) and, per
chunk, the null count where known. Every function here takes such a *core* (an ``ArrowColumn`` is
one); the few that make a new column make one of the core's own class, so this layer needs no import
of the classes above it. Layers that receive data with no column at hand (IPC, unpickling) build user
objects through :func:`make`, whose constructors ``column.py`` and ``table.py`` register.

>>> import pyarrow as pa, arrowdev as ad
>>> col = ad.column(pa.chunked_array([[1, None], [3]]))
>>> [c.length for c in chunks(col)], [chunk_null_count(col, i) for i in range(2)], chunk_starts(col)
([2, 1], [1, 0], [0, 2])
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence, TypeVar

from .. import _capsules
from . import layout
from ..errors import DeviceUnavailableError
from .types import DataType, Device

__all__ = ["ColumnCore", "aligned_bounds", "chunk_null_count", "chunk_starts", "chunks", "derive", "device",
           "dtype", "exportable_chunks", "joined_sync_event", "make", "null_counts", "planning_reader", "read",
           "length", "ready_chunk", "reader_for", "register_maker", "slice_chunks", "struct_field", "sync_events",
           "wait_for_producers"]

ColumnCore = _capsules.ColumnCore
_CPU = 1  # ArrowDeviceType of CPU memory

# ---- the state ----------------------------------------------------------------------------------


_Core = TypeVar("_Core", bound=ColumnCore)  # derive() makes a column of its argument's own class

def dtype(core: ColumnCore) -> DataType:
    """The column's type."""
    return core._type


def chunks(core: ColumnCore) -> list[Any]:
    """The column's chunks, held arrays (the list itself: columns share it, nobody changes it)."""
    return core._chunks


def length(core: ColumnCore) -> int:
    """The column's number of rows."""
    return sum(c.length for c in core._chunks)


def null_counts(core: ColumnCore) -> list[int | None]:
    """Each chunk's null count where known (None: to be counted), as the chunks say at first."""
    if core._nulls is None:
        core._nulls = [n if (n := c.null_count) >= 0 else None for c in core._chunks]
    return core._nulls


def derive(core: _Core, new_chunks: list[Any], nulls: list[int | None] | None = None,
           new_type: DataType | None = None) -> _Core:
    """A column of ``core``'s class over ``new_chunks`` (of ``core``'s type unless ``new_type``),
    with the null counts already known (``nulls``; None: none known)."""
    out = type(core)(core._type if new_type is None else new_type, new_chunks)
    if nulls is not None:
        out._nulls = list(nulls)
    return out


def device(core: ColumnCore) -> Device:
    """The device of the chunks (CPU for a column of none)."""
    held = core._chunks
    if not held:
        return Device.cpu()
    return Device.from_code(held[0].device_type, held[0].device_id)


def chunk_starts(core: ColumnCore) -> list[int]:
    """The row at which each chunk starts."""
    return list(itertools.accumulate((c.length for c in core._chunks), initial=0))[:-1]


# ---- reading memory -------------------------------------------------------------------------------


def reader_for(where: Device) -> layout.Reader:
    """The function that reads bytes of memory on ``where`` to the host."""
    if where.is_cpu_readable:
        return layout.read_cpu
    if where.type in ("cuda", "cuda_managed"):
        from ..gpu import runtime

        return lambda address, nbytes: runtime.read_bytes(address, nbytes, where.id)
    raise DeviceUnavailableError(f"arrowdev cannot read {where.type} memory")


def planning_reader(cores: list[ColumnCore], ready: bool = False) -> layout.Reader:
    """A reader of the memory of ``cores`` (columns on one device) for planning copies and frames: CPU
    memory read in place, device memory in batches (:class:`layout.BatchReader`), either after the
    columns' producers have finished (C7), waited for once and only if something is read (``ready``:
    they have finished already)."""
    waited = ready

    def wait() -> None:
        nonlocal waited
        if not waited:
            wait_for_producers(*cores)
            waited = True
    where = device(cores[0]) if cores else Device.cpu()
    if where.is_cpu_readable:
        def read_cpu(address: int, nbytes: int) -> bytes:
            wait()
            return layout.read_cpu(address, nbytes)
        return read_cpu
    if where.type in ("cuda", "cuda_managed"):
        from ..gpu import runtime

        def read_many(requests: list[tuple[int, int]]) -> list[bytes]:
            wait()
            return runtime.read_many(requests, where.id)
        return layout.BatchReader(read_many)
    raise DeviceUnavailableError(f"arrowdev cannot read {where.type} memory")


def sync_events(core: ColumnCore) -> list[int]:
    """The chunks' sync events (addresses of ``cudaEvent_t``), where they have one."""
    return [c.sync_event for c in core._chunks if c.sync_event]


def joined_sync_event(pieces: list[Any], where: Device) -> tuple[int | None, Any]:
    """(the sync event, what keeps it alive) for a parent built over ``pieces`` (held arrays on
    ``where``), which consumers wait on instead of the pieces' own (C7: an ArrowDeviceArray has one event):
    the pieces' event where they share one (a batch of copies), else one recorded on arrowdev's stream
    after waiting on each; (None, None) where no piece has one."""
    events = list(dict.fromkeys(p.sync_event for p in pieces if p.sync_event))
    if len(events) <= 1:
        return (events[0] if events else None), None  # the pieces keep it alive, and the parent keeps them
    from ..gpu import runtime

    stream = runtime.stream_for(where.id)
    runtime.wait_on_events(stream, events)
    joined = runtime.SyncEvent(stream, where.id)
    return joined.address, joined


def wait_for_producers(*cores: ColumnCore) -> None:
    """Blocks until the work producing the columns' data has finished (their sync events, C7; an event that
    several chunks share, a batch of copies', waited on once)."""
    events = [event for core in cores for event in sync_events(core)]
    if events:
        from ..gpu import runtime

        runtime.synchronize_events(events)


COUNT_ON_DEVICE_ABOVE = 4096
"""Device bitmaps of more bytes than this are counted on the GPU (a kernel, a sum, an 8-byte read); smaller ones
are read to the host, one read as cheap as the kernel's. docs/distributed.md has what copying large ones cost."""


class _ReaderAfterProducers:
    """A reader of one column's memory that first waits for its producers (C7); the wait happens only
    when a computation really needs bytes, once (a walk over many chunks reads many times). It also counts a
    bitmap's set bits where the bitmap is (``count_set_bits``, which ``layout.null_count`` asks for)."""

    __slots__ = ("_core", "_where", "_reader")

    def __init__(self, core: ColumnCore) -> None:
        self._core, self._where = core, device(core)
        self._reader: layout.Reader | None = None

    def _ready(self) -> layout.Reader:
        if self._reader is None:
            wait_for_producers(self._core)
            self._reader = reader_for(self._where)
        return self._reader

    def __call__(self, address: int, nbytes: int) -> bytes:
        return self._ready()(address, nbytes)

    def count_set_bits(self, address: int, bit_offset: int, length: int) -> int:
        """Set bits among bits [bit_offset, bit_offset + length) of the bitmap at ``address``: in CPU memory by
        the native popcount in place, a large one on a GPU by a kernel there, else read and counted."""
        read = self._ready()
        if self._where.is_cpu_readable:
            return layout.count_in_place(address, bit_offset, length)
        first, last = bit_offset // 8, (bit_offset + length + 7) // 8
        if last - first <= COUNT_ON_DEVICE_ABOVE:
            return layout.count_set_bits(read(address + first, last - first), bit_offset - 8 * first, length)
        from ..gpu import runtime

        return runtime.count_set_bits(address, bit_offset, length, self._where.id)


def read(core: ColumnCore) -> layout.Reader:
    """A reader of the column's memory that first waits for its producers (:class:`_ReaderAfterProducers`)."""
    return _ReaderAfterProducers(core)


# ---- null counts and exports ---------------------------------------------------------------------


def chunk_null_count(core: ColumnCore, i: int) -> int:
    """Chunk ``i``'s null count, computed from its validity bitmap where the producer said -1
    (counted once, then kept)."""
    known = null_counts(core)
    n = known[i]
    if n is None:
        c = core._chunks[i]
        validity = c.buffers[0] if c.n_buffers else 0
        n = known[i] = layout.null_count(core._type, c.offset, c.length, validity, read(core))
    return n


def ready_chunk(core: ColumnCore, i: int) -> Any:
    """Chunk ``i``, its exports carrying computed null counts: for the top node always, below it
    where that needs no device read. Counted once per chunk."""
    chunk = core._chunks[i]
    if chunk.needs_null_counts:
        _fill_null_counts(core, i)
    return chunk


def exportable_chunks(core: ColumnCore) -> list[Any]:
    """The chunks, each ready to export with computed null counts (C6: -1 is computed, not passed on)."""
    return [ready_chunk(core, i) for i in range(len(core._chunks))]


def _fill_null_counts(core: ColumnCore, i: int) -> None:
    """Gives chunk ``i``'s container a null count for every node whose producer said -1
    (capsules/container.c C6): the top's as :func:`chunk_null_count` computes it; a node below it
    from its type and validity bitmap, where the bitmap is CPU-readable or not needed (device
    bitmaps are not read for this: those nodes keep -1, as the C Data interface allows)."""
    chunk, column_type = core._chunks[i], core._type
    reader = read(core) if device(core).is_cpu_readable else None
    tree = layout.Node.of(chunk)
    counts = [chunk_null_count(core, i)]
    for child_type, child in zip(column_type.children, tree.children):
        counts.extend(layout.node_null_counts(child_type, child, reader))
    if tree.dictionary is not None and column_type.value_type is not None:
        counts.extend(layout.node_null_counts(column_type.value_type, tree.dictionary, reader))
    chunk.set_null_counts(counts)


# ---- slicing and alignment -----------------------------------------------------------------------


def struct_field(held: Any, index: int) -> Any:
    """Child ``index`` of a held struct array, as its own array over the struct's rows (a struct's
    offset applies to its children)."""
    child = held.child(index)
    if held.offset or child.length != held.length:
        child = child.slice(child.offset + held.offset, held.length, 0 if child.null_count == 0 else -1)
    return child


def slice_chunks(core: ColumnCore, start: int, stop: int) -> tuple[list[Any], list[int | None]]:
    """The chunks of rows [start, stop) (``0 <= start <= stop <= len``) and their known null counts,
    zero-copy: whole chunks where the range covers them, sliced ones at the ends."""
    held, known_nulls = core._chunks, null_counts(core)
    if start == stop and held:  # an empty slice keeps a chunk, so its device and type
        # (at offset 0: PyArrow loses the buffers of an empty array with an offset when it
        # concatenates it after its C import)
        return [held[0].slice(0, 0, 0)], [0]
    out, nulls = [], []
    for i, (chunk, first) in enumerate(zip(held, chunk_starts(core))):
        lo, hi = max(start, first), min(stop, first + chunk.length)
        if lo >= hi:
            continue
        if hi - lo == chunk.length:
            out.append(chunk)
            nulls.append(known_nulls[i])
        else:
            known = 0 if known_nulls[i] == 0 else -1
            out.append(chunk.slice(chunk.offset + lo - first, hi - lo, known))
            nulls.append(0 if known == 0 else None)
    return out, nulls


def aligned_bounds(cores: Sequence[ColumnCore], num_rows: int) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) cut at every chunk start of every column: each lies in one chunk of each."""
    starts = {0}
    for core in cores:
        starts.update(chunk_starts(core))
    bounds = sorted(s for s in starts if s < num_rows) + [num_rows]
    return list(zip(bounds, bounds[1:]))


# ---- user objects made below them ----------------------------------------------------------------

_MAKERS: dict[str, Callable[..., Any]] = {}


def register_maker(kind: str, make_one: Callable[..., Any]) -> None:
    """Registers how to make a user object of ``kind`` ("column": from its type and chunks; "table": from
    its struct type and record batches; "table_of_columns": from its struct type, its columns and its
    number of rows). column.py and table.py register theirs when imported."""
    _MAKERS[kind] = make_one


def make(kind: str, of_type: DataType, held: list[Any], *more: Any) -> Any:
    """A column or table (``kind``) over held arrays (or columns), for layers that cannot import the
    user objects."""
    return _MAKERS[kind](of_type, held, *more)
