"""Columns and tables as a small header plus one frame per buffer, each frame holding only the bytes
of the rows in range: the one planner behind pickling (protocol 5 with out-of-band buffers) and Dask's
``dask`` and ``cuda`` serializer families (:mod:`arrowdev.dask`).

The planner is the copy planner of :mod:`arrowdev.cuda.transfer` (layout.py's buffer rules): where a
copy would copy bytes [first, end) of a buffer, the serializer sends exactly that range of the source
memory as a frame, without copying it. So a 10-row slice of a large table sends about 10 rows:
bitmaps start at the byte holding the first row (the node's offset keeps the bit position), fixed-width
data at the first row, offsets buffers at the first row, variable-size data at the first value used.
Offsets are sent as they are; the header says by how much the receiver lowers them (it copies that one
buffer: the sender never touches the data, so serializing takes the same time at any size).
A table travels column by column, each column in its own chunks (the receiver gets the same chunks).

The header is plain data (dicts, lists, ints, bytes: msgpack and pickle both carry it)::

    {"kind": "table" | "column", "device": [ArrowDeviceType, id] of the source,
     "schema": Arrow IPC schema bytes of one field (the table's struct type; PyArrow writes and reads them),
     "rows": number of rows, "columns": [[node per chunk, ...] per column, ...] (a column: one),
     "frames": number of frames, "packed": absent, or [[frame, byte offset, size] per span, ...]}
    node   = [length, null_count, offset, [buffer, ...], [child node, ...], dictionary node or None]
    buffer = None (a null pointer) | [span] | [span, offset width, value to subtract]

A span is a frame, unless the header has ``packed``.

Frames are ``memoryview`` objects over the source memory (CPU data; they keep the source alive), or
:class:`DeviceFrame` objects exposing ``__cuda_array_interface__`` (device data, the ``cuda`` family).
Received frames are used in place; a frame whose address is not 8-byte aligned (small frames that a
transport packed together) is copied, since Arrow consumers expect aligned buffers. Device data for the
``cuda`` family sends each buffer of at least ``PACK_BELOW`` bytes as a frame of its own and copies the
smaller ones into one packed frame (a transport pays per frame); ``packed`` then says where each span
lies, and buffer entries name spans.

Device data through pickle or the ``dask`` family is copied to pinned host memory first (rows in range
only) and rebuilt, on the receiving side, on the receiver's current GPU; a receiver without a GPU (or
without CuPy) keeps it in CPU memory.
"""

from __future__ import annotations

import math
import pickle
import weakref
from typing import Any, Callable

import numpy as np

from .. import _capsules
from ..core import chunks as _chunked, layout
from ..core.types import DataType, Device
from ..cuda.transfer import Planner, PlannedNode
from . import checks

__all__ = ["DeviceFrame", "add_pickle_hook", "device_frames", "from_frames", "host_frames", "nbytes", "reduce",
           "unpickle"]

_ALIGNMENT = 8
_EMPTY = np.zeros(_ALIGNMENT, dtype=np.uint8)  # the address of an empty buffer (never null)
_OFFSET_TYPES = {4: np.int32, 8: np.int64}


class _SpanPlanner(Planner):
    """The transfer planner, recording each buffer range as a frame instead of copying it. Equal
    ranges (a dictionary shared by chunks, a column in two tables) become one frame."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[int, int]] = []
        self._index: dict[tuple[int, int], int] = {}

    def _copy_range(self, node: PlannedNode, src: int, first: int, end: int,
                    rebase: tuple[int, int] | None = None, last: tuple[int, int, int] | None = None) -> None:
        if not src:
            node.buffers.append(None)
            return
        span = (src + first, end - first)
        index = self._index.get(span)
        if index is None:
            index = self._index[span] = len(self.spans)
            self.spans.append(span)
        node.buffers.append([index, *rebase] if rebase else [index])


def _encode(node: PlannedNode) -> list:
    dictionary = None if node.dictionary is None else _encode(node.dictionary)
    return [node.length, node.null_count, node.offset, node.buffers, [_encode(c) for c in node.children], dictionary]


def _kind_and_columns(obj: Any) -> tuple[str, list[Any]]:
    """("column", [the column]) or ("table", its columns). A table travels column by column, each
    column in its own chunks: cutting it into record batches would split every column at every
    other column's chunk boundaries (more nodes and frames, and bitmaps cut at bytes that are not
    8-byte aligned, which the receiver would have to copy)."""
    if isinstance(obj, _chunked.ColumnCore):
        return "column", [obj]
    return "table", obj.columns


# Plans kept per object (columns and tables never change): Dask sizes an object when it arrives and
# serializes it when another worker asks, and planning a table of many chunks costs milliseconds.
# Keyed by id, the entry removed when the object goes (columns and tables are not hashable).
# A plan in pieces (``piece_bytes``) is kept apart, keyed (id, piece_bytes).
# A received object's entry is (ref, a function making its (header, spans) or None, None) until first asked for.
_kept_plans: dict[Any, tuple[Any, Any, list[tuple[int, int]] | None]] = {}


def _keep_plan(obj: Any, header: dict[str, Any], spans: list[tuple[int, int]], piece_bytes: int | None = None) -> None:
    key = id(obj) if piece_bytes is None else (id(obj), piece_bytes)
    _kept_plans[key] = (weakref.ref(obj, lambda _: _kept_plans.pop(key, None)), header, spans)


def _plan(obj: Any, source: Device, ready: bool, piece_bytes: int | None = None,
          schema: bool = True) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """The header and the (address, size) of each frame of a column or table. ``ready``: its
    producers have finished (else the memory is read, where it must be, after waiting for them).
    ``piece_bytes`` (CPU data only): chunks whose frames would pass it are sent as row ranges under it,
    each a chunk of its own (:func:`host_frames`). The header is the caller's to change (a copy of the kept one).
    ``schema``: the header carries the serialized schema (made when first asked for: Dask's ``sizeof`` of
    every task's result needs the sizes alone)."""
    key = id(obj) if piece_bytes is None else (id(obj), piece_bytes)
    kept = _kept_plans.get(key)
    if kept is not None and kept[0]() is obj and kept[2] is None:  # a received object's plan, made when first asked
        made = kept[1]()
        _kept_plans.pop(key, None)
        if made is not None:
            _keep_plan(obj, *made)
        kept = _kept_plans.get(key)
    if kept is not None and kept[0]() is obj:
        if schema and "schema" not in kept[1]:
            kept[1]["schema"] = _schema_of(obj).ipc_schema
        return dict(kept[1]), kept[2]
    if piece_bytes is not None:
        header, spans = _plan(obj, source, ready)
        if all(size <= piece_bytes for _, size in spans):
            return header, spans  # nothing to cut
    header, spans = _make_plan(obj, source, ready, piece_bytes)
    if schema:
        header["schema"] = _schema_of(obj).ipc_schema
    _keep_plan(obj, header, spans, piece_bytes)
    return dict(header), spans


def _schema_of(obj: Any) -> DataType:
    """A column's type, or a table's schema (a struct)."""
    kind, columns = _kind_and_columns(obj)
    return columns[0].type if kind == "column" else obj.schema


def _chunk_trees(dtype: DataType, held: Any, nulls: int | None, piece_bytes: int | None) -> list[tuple]:
    """What the planner plans for one chunk: (type, tree, first row, end row, null count), once, or per
    row piece (``layout.row_pieces``; a piece's null count is known only where the chunk has no nulls)."""
    tree, count = layout.Node.of(held), -1 if nulls is None else nulls
    pieces = [(0, held.length)] if piece_bytes is None else layout.row_pieces(dtype, tree, piece_bytes)
    if len(pieces) == 1:
        return [(dtype, tree, 0, held.length, count)]
    return [(dtype, tree, lo, hi, 0 if count == 0 else -1) for lo, hi in pieces]


def _make_plan(obj: Any, source: Device, ready: bool,
               piece_bytes: int | None = None) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    kind, columns = _kind_and_columns(obj)
    trees = [[tree for held, nulls in zip(_chunked.chunks(col), _chunked.null_counts(col))
              for tree in _chunk_trees(col.type, held, nulls, piece_bytes)] for col in columns]
    read = _chunked.planning_reader(columns, ready)
    while True:  # device memory: each round's reads in one batch, until a round reads nothing new
        planner = _SpanPlanner()
        planner.read = read
        planned = [[_encode(planner.plan(*tree)) for tree in col_trees] for col_trees in trees]
        if not isinstance(read, layout.BatchReader) or not read.fetch():
            break
    header = {"kind": kind, "device": [source.code, source.id], "rows": len(obj), "columns": planned,
              "frames": len(planner.spans)}
    return header, planner.spans


def nbytes(obj: Any) -> int:
    """Bytes of the buffers of the rows in range of a column or table, what a send carries (shared
    buffers counted once)."""
    _, spans = _plan(obj, obj.device, ready=False, schema=False)
    return sum(size for _, size in spans)


# ---- sending ------------------------------------------------------------------------------------


def _host_frame(address: int, nbytes: int, owner: Any) -> memoryview:
    """A read-only view of host memory that keeps ``owner`` alive (no copy). A PyArrow foreign
    buffer: a tenth of the cost of a NumPy array over the same bytes, and a table sends a frame
    per buffer of every chunk."""
    if nbytes == 0:
        return memoryview(b"")
    import pyarrow as pa

    return memoryview(pa.foreign_buffer(address, nbytes, base=owner)).cast("B")


class DeviceFrame:
    """Device bytes [address, address + nbytes) as a one-dimensional uint8 CUDA array (CAI v3) that
    keeps its owner alive: what UCX sends GPU to GPU."""

    __slots__ = ("__cuda_array_interface__", "nbytes", "owner")

    def __init__(self, address: int, nbytes: int, owner: Any) -> None:
        self.__cuda_array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1",
                                         "version": 3, "strides": None, "stream": None}
        self.nbytes, self.owner = nbytes, owner


def _wait_for_producers(obj: Any) -> None:
    """Blocks until the work producing the data has finished: the sync events of the column, or of
    the table's columns (columns made from record batches carry the batches' events), each event once."""
    _chunked.wait_for_producers(*_kind_and_columns(obj)[1])


def host_frames(obj: Any, piece_bytes: int | None = None) -> tuple[dict[str, Any], list[memoryview]]:
    """(header, frames) of a column or table, the frames in host memory: views of CPU data (zero-copy),
    or of a pinned host copy of the rows in range of device data. ``piece_bytes``: CPU data whose frames
    would pass it travels in row ranges under it, each a chunk of its own on the receiving side, the same
    values (distributed's TCP comm cuts larger frames into shards that its receiver copies back together,
    except the first frame's: docs/distributed.md); device data keeps its chunks (it is copied on arrival)."""
    source = obj.device
    if not source.is_cpu_readable:
        obj, piece_bytes = obj.to_host(), None  # one batch of copies, ordered after every producer's sync event
    _wait_for_producers(obj)
    header, spans = _plan(obj, source, ready=True, piece_bytes=piece_bytes)
    return header, [_host_frame(address, nbytes, obj) for address, nbytes in spans]


def device_frames(obj: Any) -> tuple[dict[str, Any], list[Any]]:
    """(header, frames) for the ``cuda`` family: frames over device memory are :class:`DeviceFrame`
    objects, returned only once the data's producers have finished (its sync events: UCX orders its
    sends after the default stream only); CPU data gives host frames as :func:`host_frames` does."""
    source = obj.device
    if source.is_cpu_readable:
        return host_frames(obj)
    _wait_for_producers(obj)
    header, spans = _plan(obj, source, ready=True)
    return header, _device_frames(header, spans, obj, source.id)


# A transport pays per frame (UCX about 0.1 ms: a rendezvous each, awaited in turn); a device copy of the
# same 0.1 ms moves about 150 MB. So buffers that lie back to back in one allocation (a table received as
# one frame) travel as one frame over them, and the other buffers below PACK_BELOW bytes are copied
# together into one packed frame; the larger ones travel as frames of their own.
PACK_BELOW = 64 << 20
_PACK_ALIGNMENT = 256  # where each buffer starts in the packed frame (CUDA's allocation alignment)


def _device_frames(header: dict[str, Any], spans: list[tuple[int, int]], obj: Any, device_id: int) -> list[Any]:
    """The frames of device spans (above); where they are not one per span, ``header["packed"]`` says
    where each span is: [frame, offset, size]."""
    places: list[list[int] | None] = [None] * len(spans)
    frames: list[Any] = []
    alone = []
    for run in _adjacent_runs(spans):
        for group in _allocation_groups(run, spans) if len(run) > 1 else [run]:
            if len(group) == 1:
                alone.extend(group)
                continue
            start, end = spans[group[0]][0], max(spans[i][0] + spans[i][1] for i in group)
            for i in group:
                places[i] = [len(frames), spans[i][0] - start, spans[i][1]]
            frames.append(DeviceFrame(start, end - start, obj))
    small = sorted(i for i in alone if spans[i][1] < PACK_BELOW)
    for i in sorted(set(alone) - set(small)) if len(small) > 1 else sorted(alone):
        places[i] = [len(frames), 0, spans[i][1]]
        frames.append(DeviceFrame(*spans[i], obj))
    if len(small) > 1:
        frames.append(_packed_frame(spans, small, places, len(frames), device_id))
    if any(place != [i, 0, spans[i][1]] for i, place in enumerate(places)):
        header["frames"], header["packed"] = len(frames), places
        return frames
    return [DeviceFrame(address, nbytes, obj) for address, nbytes in spans]  # one frame per span, in order


def _adjacent_runs(spans: list[tuple[int, int]]) -> list[list[int]]:
    """Span indices in runs of spans that follow each other in memory (gaps under the allocation
    alignment), in address order."""
    runs: list[list[int]] = []
    end = None  # where the last run ends; None after an empty span, which stands alone
    for i in sorted(range(len(spans)), key=lambda i: spans[i][0]):
        address, nbytes = spans[i]
        if end is not None and nbytes and address <= end + _PACK_ALIGNMENT:
            runs[-1].append(i)
            end = max(end, address + nbytes)
        else:
            runs.append([i])
            end = address + nbytes if nbytes else None
    return runs


def _allocation_groups(run: list[int], spans: list[tuple[int, int]]) -> list[list[int]]:
    """A run of adjacent spans cut where one CUDA allocation ends and the next begins: a transport maps one
    allocation at a time, and separate allocations can lie back to back (the driver places small ones so,
    e.g. the blocks of a table's columns)."""
    groups: list[list[int]] = []
    end = 0  # where the allocation of the last group ends
    for i in run:
        address, nbytes = spans[i]
        if groups and address + nbytes <= end:
            groups[-1].append(i)
            continue
        base, size = _allocation_range(address)
        end = base + size if base <= address else address  # not known to the driver: a group of its own
        groups.append([i])
    return groups


def _allocation_range(address: int) -> tuple[int, int]:
    from ..gpu import runtime

    return runtime.allocation_range(address)


def _packed_frame(spans: list[tuple[int, int]], small: list[int], places: list, index: int, device_id: int) -> Any:
    """One device buffer holding copies of spans ``small`` (each at an aligned offset; their places
    filled in as frame ``index``), ready once this returns."""
    from ..gpu import memory, runtime

    position = 0
    for i in small:
        places[i] = [index, position, spans[i][1]]
        position += -(-spans[i][1] // _PACK_ALIGNMENT) * _PACK_ALIGNMENT
    stream = runtime.stream_for(device_id)
    address, owner = memory.transport_buffer(position, device_id, stream)
    api = runtime.cupy().cuda.runtime
    with runtime.on_device(device_id):
        for i in small:
            api.memcpyAsync(address + places[i][1], spans[i][0], spans[i][1], api.memcpyDeviceToDevice, stream.ptr)
        stream.synchronize()  # UCX orders its sends after the default stream only
    return DeviceFrame(address, position, owner)


def reduce(obj: Any, protocol: int) -> tuple[Any, tuple]:
    """``__reduce_ex__`` of columns and tables: frames out of band with protocol 5 (zero-copy when the
    pickler takes a ``buffer_callback``), in band as bytes with older protocols."""
    header, frames = host_frames(obj)
    wrapped = [pickle.PickleBuffer(f) for f in frames] if protocol >= 5 else [bytes(f) for f in frames]
    for hook in _PICKLE_HOOKS:
        hook()
    return unpickle, (type(obj), header, *wrapped)


_PICKLE_HOOKS: list[Callable[[], None]] = []


def add_pickle_hook(hook: Callable[[], None]) -> None:
    """Has ``hook()`` called whenever an arrowdev object is pickled: how a layer above this one (Dask's
    registration, installed by ``arrowdev/__init__.py``) reacts without this module importing it."""
    _PICKLE_HOOKS.append(hook)


# ---- receiving ----------------------------------------------------------------------------------


def unpickle(cls: type, header: dict[str, Any], *frames: Any) -> Any:
    """The object :func:`reduce` pickled (``cls``, its class, is implied by the header's kind)."""
    return from_frames(header, list(frames))


def _frame_address(frame: Any, keep: list[Any]) -> tuple[int, int, bool]:
    """(address, size, on a device) of a received frame, copied first when unaligned (host only)."""
    if type(frame) is DeviceFrame:  # a span of a packed frame (_unpacked): its size is at hand
        keep.append(frame)
        return frame.__cuda_array_interface__["data"][0], frame.nbytes, True
    cai = getattr(frame, "__cuda_array_interface__", None)
    if cai is not None:
        keep.append(frame)
        return cai["data"][0], _frame_size(frame, cai), True
    import pyarrow as pa

    try:
        view = pa.py_buffer(frame)  # its address at a tenth of the cost of a NumPy array's
    except (TypeError, ValueError, BufferError) as e:
        from ..core.value_checks import refuse

        raise refuse("frames", "bytes-like frames (or CUDA arrays)", f"{type(frame).__name__} ({e})") from None
    if view.size == 0:
        return _EMPTY.ctypes.data, 0, False
    if view.address % _ALIGNMENT:
        view = pa.py_buffer(np.frombuffer(frame, dtype=np.uint8).copy())
    keep.append(view)
    return view.address, view.size, False


class _Rebuilder:
    """Builds held arrays from header nodes over received frames (host or device)."""

    def __init__(self, frames: list[Any]) -> None:
        self.frames = []  # (address, size, on a device, objects that keep the memory alive)
        for frame in frames:
            owners: list[Any] = []
            self.frames.append((*_frame_address(frame, owners), owners))
        self.on_device = any(f[2] for f in self.frames)
        self.used: dict[int, list[int]] = {}  # span -> the address of each buffer made of it
        self.device = Device.cpu()
        self.events: list[Any] = []  # rebases enqueued on arrowdev's stream for the device, in order
        if self.on_device:
            from ..gpu import runtime

            somewhere = next((f[0] for f in self.frames if f[2] and f[0]), 0)
            if somewhere:
                kind, device_id = runtime.pointer_device(somewhere)
                self.device = Device(kind, device_id)
            else:
                self.device = Device("cuda", runtime.cupy().cuda.runtime.getDevice())
            # an empty device frame may arrive as a null pointer: give it any address on the device
            # (never read), since Arrow buffers other than validity are not null
            self.frames = [(a or somewhere, n, d, o) if d else (a, n, d, o) for a, n, d, o in self.frames]

    def buffer(self, entry: list | None, keep: list[Any]) -> int:
        if entry is None:
            return 0
        address, nbytes, on_device, owners = self.frames[entry[0]]
        if len(entry) == 1:
            keep.extend(owners)
            self.used.setdefault(entry[0], []).append(address)
            return address
        width, value = entry[1], entry[2]
        if on_device:  # the frame stays alive with the array: the rebase reads it asynchronously
            rebased, event = _rebase_on_device(address, nbytes, width, value, self.device.id)
            self.events.append(event)
            keep.extend([rebased, *owners])
            rebased_address = rebased.ptr
        else:
            whole = nbytes // width * width  # the node's offsets are in it (checked); a trailing part is not read
            rebased = np.frombuffer(_host_frame(address, whole, owners), dtype=_OFFSET_TYPES[width]) - value
            keep.append(rebased)
            rebased_address = rebased.ctypes.data
        self.used.setdefault(entry[0], []).append(rebased_address)
        return rebased_address

    def keep_received_plan(self, obj: Any, header: dict[str, Any]) -> None:
        """Keeps what sending ``obj`` on would plan: the received nodes over the buffers it was built on
        (rebased offsets as they now are), so a received table is sized and sent on without planning; made
        when first asked for (most received objects are never sent on)."""
        used, frames = self.used, [(address, nbytes) for address, nbytes, _, _ in self.frames]
        device = [self.device.code, self.device.id]
        key = id(obj)  # (the callbacks hold no reference to obj: it goes when its users let it go)
        _kept_plans[key] = (weakref.ref(obj, lambda _: _kept_plans.pop(key, None)),
                            lambda: _received_plan(header, frames, used, device), None)

    def build(self, dtype: DataType, node: list, top: bool = False) -> Any:
        """The held array (of ``dtype``) of a node and its subtree; a top node carries the event of
        the device rebases (all on one stream, so the last fires after every one)."""
        length, null_count, offset, buffers, children, dictionary = node
        keep: list[Any] = []
        addresses = [self.buffer(entry, keep) for entry in buffers]
        kids = [self.build(child_type, child) for child_type, child in zip(dtype.children, children, strict=True)]
        dictionary = None if dictionary is None else self.build(dtype.value_type, dictionary)
        event = self.events[-1] if top and self.events else None
        if event is not None:
            keep.append(event)
        return _capsules.build(dtype, length, null_count, offset, addresses, kids, dictionary,
                               device_type=self.device.code, device_id=self.device.id, keepalive=keep,
                               sync_event=None if event is None else event.address)


def _received_plan(header: dict[str, Any], frames: list[tuple[int, int]], used: dict[int, list[int]],
                   device: list[int]) -> tuple[dict[str, Any], list[tuple[int, int]]] | None:
    """(header, spans) sending a received object on: its nodes over the buffers it was built on. None where a
    frame became two different buffers (one frame rebased twice) or none (no node names it: the object does not
    keep it alive, and a plan over it would read freed memory): then it is planned."""
    spans = []
    for index, (address, nbytes) in enumerate(frames):
        addresses = set(used.get(index, ()))
        if len(addresses) != 1:
            return None
        spans.append((addresses.pop(), nbytes))
    sent_on = {key: value for key, value in header.items() if key != "packed"}
    sent_on.update(device=device, frames=len(spans),
                   columns=[[_without_rebases(node) for node in nodes] for nodes in header["columns"]])
    return sent_on, spans


def _without_rebases(node: Any) -> list:
    """A received header node as the receiver now holds it: its offsets already rebased."""
    length, null_count, offset, buffers, children, dictionary = node
    return [length, null_count, offset, [None if b is None else [b[0]] for b in buffers],
            [_without_rebases(child) for child in children],
            None if dictionary is None else _without_rebases(dictionary)]


def _rebase_on_device(address: int, nbytes: int, width: int, value: int, device_id: int) -> tuple[Any, Any]:
    """A device copy of an offsets buffer lowered by ``value``, and the event that fires after it."""
    from ..gpu import memory, runtime

    cp = runtime.cupy()
    stream = runtime.stream_for(device_id)
    out = memory.DeviceBuffer(nbytes, device_id, stream)
    dtype = _OFFSET_TYPES[width]
    with cp.cuda.Device(device_id), stream:
        def view(ptr: int) -> Any:
            mem = cp.cuda.UnownedMemory(ptr, nbytes, None, device_id)
            return cp.ndarray(nbytes // width, dtype, cp.cuda.MemoryPointer(mem, 0))
        cp.subtract(view(address), dtype(value), out=view(out.ptr))
    return out, runtime.SyncEvent(stream, device_id)


def from_frames(header: dict[str, Any], frames: list[Any]) -> Any:
    """The column or table that :func:`host_frames` / :func:`device_frames` described,
    over the received frames. Host frames of device data land on this process's current GPU when it
    has one (else they stay in CPU memory). The header and frames are checked before anything reads
    them (:mod:`arrowdev.serialize.checks`): InvalidArrowError names what was refused."""
    frames = list(frames)
    checks.check_header(header, len(frames))
    if header.get("packed") is not None:
        frames = _unpacked(header["packed"], frames)
    dtype, shape = checks.schema_of(bytes(header["schema"]))
    source = Device.from_code(*header["device"])
    rebuilder = _Rebuilder(frames)
    spans = [f[:3] for f in rebuilder.frames]
    checks.check_columns(header, shape, spans, checks.values_for(spans, rebuilder.device.id if rebuilder.on_device
                                                                  else None))
    table = header["kind"] == "table"
    columns = [_chunked.make("column", col_type, [rebuilder.build(col_type, node, top=True) for node in nodes])
               for col_type, nodes in zip(dtype.children if table else [dtype], header["columns"], strict=True)]
    obj = _chunked.make("table_of_columns", dtype, columns, header["rows"]) if table else columns[0]
    if source.type in ("cuda", "cuda_managed") and not rebuilder.on_device:
        return _to_current_gpu(obj)
    rebuilder.keep_received_plan(obj, header)
    return obj


def _unpacked(places: list, frames: list[Any]) -> list[Any]:
    """One frame per span from frames that hold several (``header["packed"]``), as views that keep
    the received frame alive."""
    from ..errors import InvalidArrowError

    spans = []
    received: dict[int, tuple[int | None, int, Any]] = {}  # frame -> (device address or None, size, host view)
    for place in places:
        # msgpack hands lists back as tuples
        if not (isinstance(place, (list, tuple)) and len(place) == 3
                and all(type(v) is int and v >= 0 for v in place) and place[0] < len(frames)):
            raise InvalidArrowError(f"expected each packed place to be [frame, offset, size] within the "
                                    f"{len(frames)} frames, got {place!r}")
        index, offset, nbytes = place
        frame = frames[index]
        if index not in received:  # a frame holds many spans: its interface is read once
            received[index] = _packed_frame_view(frame, index)
        address, size, view = received[index]
        if offset + nbytes > size:
            raise InvalidArrowError(f"expected packed bytes [{offset}, {offset + nbytes}) inside frame {index} of "
                                    f"{size} bytes")
        if address is not None:
            spans.append(DeviceFrame(address + offset, nbytes, frame))
        else:
            spans.append(view[offset:offset + nbytes])
    return spans


def _packed_frame_view(frame: Any, index: int) -> tuple[int | None, int, Any]:
    """(device address or None, size, host view) of a received frame holding packed spans."""
    cai = getattr(frame, "__cuda_array_interface__", None)
    if cai is not None:
        return cai["data"][0], _frame_size(frame, cai), None
    try:
        view = memoryview(frame).cast("B")
    except (TypeError, ValueError) as e:
        from ..errors import InvalidArrowError

        raise InvalidArrowError(f"expected packed frame {index} to be bytes-like, got {type(frame).__name__} ({e})")
    return None, view.nbytes, view


def _frame_size(frame: Any, cai: dict[str, Any] | None) -> int:
    if cai is not None:  # math.prod: np.prod of a shape tuple costs microseconds, and a table has many frames
        return math.prod(cai["shape"]) * np.dtype(cai["typestr"]).itemsize
    return memoryview(frame).nbytes


def _to_current_gpu(obj: Any) -> Any:
    from ..gpu import runtime

    if not runtime.is_available():
        return obj
    return obj.to_device(runtime.cupy().cuda.runtime.getDevice())
