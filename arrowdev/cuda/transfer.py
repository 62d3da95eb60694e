"""Copies of Arrow trees between host and device, and between devices, for every Arrow type.

Planning walks each tree node by node with layout.py's buffer rules and copies only the bytes
that the rows in range use:

- fixed-width, bool, string/binary (all widths), list/large_list/map, struct, fixed_size_list
  and sparse union nodes are trimmed to their rows: the new offset keeps only the bit position
  within a byte (``offset % 8``), offsets buffers are rebased to start at 0, and children get
  just the rows the parent points at;
- string_view/binary_view, list_view, dense union, run_end_encoded and null nodes keep their
  offset and are copied from the buffers' start (their children are referenced out of order).

A host-to-GPU copy of a column of many small chunks (numbers, bools, strings / binary) can be planned as one
node instead (:meth:`Transfer.plan_merged`): each chunk's bytes placed right after the previous chunk's, offsets
rebased to continue them, so the column arrives in one chunk at the cost of the same copies.

Execution puts every copy of one call on one stream after waiting on the sources' sync events
(C7), records one event after them (the results' ``sync_event``), and keeps sources and staging
memory alive until that event fires. Host-to-device copies of pageable memory are staged through
a small ring of pinned buffers that several threads fill while earlier pieces are already on their
way to the device (staging.py). Device-to-host copies land in pinned memory directly (the result's
device is ``cuda_host``: the CPU reads it in place once the event has fired).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import _capsules
from ..core import layout
from ..core.types import DataType, Device
from ..errors import InvalidArrowError
from ..gpu import memory, runtime, staging

# what the copies read of core/layout.py's one table of layouts
_WHOLE = frozenset(k for k, v in layout.LAYOUTS.items() if v.cut == "whole")
_OFFSET_WIDTH = {k: v.offsets for k, v in layout.LAYOUTS.items() if v.kind in ("bytes", "list")}
_DEVICE_MEMORY = frozenset({"cuda", "cuda_managed"})


MERGE_MORE_CHUNKS_THAN = 8
MERGE_MEAN_ROWS_BELOW = 1 << 20
"""A column copied to a GPU with ``rechunk=None`` becomes one chunk where it has more chunks than this, of fewer rows
than this on average: PyArrow's ``pq.read_table`` gives chunks of 131,072 rows, and each chunk costs a UDF call a
launch and its host work (docs/device.md, "Many small chunks become one", has what that costs)."""


def mergeable(dtype: DataType, nodes: list[layout.Node]) -> bool:
    """Whether chunks of one column can be copied into one chunk by byte copies alone: numbers, bools and
    strings / binary, where bitmaps are involved every chunk starting at a byte and every chunk but the last
    a multiple of 8 rows long (PyArrow's reads are: 131,072 rows a batch)."""
    if len(nodes) < 2 or not any(n.length for n in nodes) or any(layout.flat_leaf(dtype, n) is None for n in nodes):
        return False
    bits = layout.flat_leaf(dtype, nodes[0]) == 0 and dtype.element_bits(1) == 1
    if bits or any(n.buffers[0] for n in nodes):
        return not any(n.offset % 8 for n in nodes) and not any(n.length % 8 for n in nodes[:-1])
    return True


@dataclass
class _Copy:
    dst: int
    src: int
    nbytes: int
    rebase: tuple[int, int] | None = None  # (offset width, value to subtract) for offsets buffers
    block: _Block | None = None  # where dst is an offset into this block until it is allocated


BLOCK_ALIGNMENT = 256  # where each buffer starts in its block: what cudaMalloc gives every allocation


class _Block:
    """The buffers of one group (a column) planned into one allocation, each at an aligned place: one
    allocation instead of one per buffer, and a table's column lies together in memory (a transport sends
    it as one frame)."""

    __slots__ = ("size", "places", "known", "base", "owner")

    def __init__(self) -> None:
        self.size = 0
        self.places: list[tuple[PlannedNode, int, int]] = []  # (node, buffer index, offset in the block)
        self.known: list[tuple[int, bytes]] = []  # (offset in the block, bytes the copy will write there)
        self.base, self.owner = 0, None

    def reserve(self, nbytes: int) -> int:
        """The offset of ``nbytes`` more bytes in the block."""
        offset = -(-self.size // BLOCK_ALIGNMENT) * BLOCK_ALIGNMENT
        self.size = offset + nbytes
        return offset


@dataclass(slots=True)
class PlannedNode:
    length: int
    null_count: int
    offset: int
    buffers: list[int]
    children: list[PlannedNode]
    dictionary: PlannedNode | None
    dtype: DataType  # the node's type: the held array is built as one of it
    keep: list[Any] = field(default_factory=list)


class Planner:
    """Walks Arrow trees and hands each buffer range that the rows in range use to
    :meth:`_copy_range`. :class:`Transfer` copies those ranges; arrowdev.serialize.frames sends them as
    they are (zero-copy frames)."""

    def __init__(self) -> None:
        self.read: Callable[[int, int], bytes] = layout.read_cpu  # the source reader of the tree being planned

    def _copy_range(self, node: PlannedNode, src: int, first: int, end: int,
                    rebase: tuple[int, int] | None = None, last: tuple[int, int, int] | None = None) -> None:
        """Adds to ``node`` what stands for source bytes [first, end) of the buffer at ``src``
        (``rebase``: the offsets in them are to be lowered by ``value``, their width given; ``last``: for an
        offsets buffer, (width, index, value): the copy's offsets are 0 at index 0 and value at index)."""
        raise NotImplementedError

    def plan(self, dtype: DataType, tree: layout.Node, lo: int, hi: int, null_count: int) -> PlannedNode:
        """The copy of rows [lo, hi) of one node and what it points at."""
        offset, buffers, children, dictionary = tree.offset, tree.buffers, tree.children, tree.dictionary
        width = layout.flat_leaf(dtype, tree)
        if width is not None:
            return self._plan_leaf(dtype, offset + lo, hi - lo, buffers, null_count, width)
        storage, start, n = dtype.storage_id, offset + lo, hi - lo
        specs = layout.buffer_specs(dtype, start, n, buffers, self.read)
        cut = layout.LAYOUTS[storage].cut
        if cut == "whole":
            base = 0
        elif cut == "from_first_row":
            base = start
        else:
            base = start - start % 8
        node = PlannedNode(n, null_count, start - base, [], [], None, dtype)
        child_range = (0, None)
        for spec, src in zip(specs, buffers):
            if spec.size < 0:  # a view array's variadic size, as its producer wrote it
                raise InvalidArrowError(f"expected a size of at least 0 for the {spec.role} buffer of a {dtype} node,"
                                        f" got {spec.size}: not copied or sent")
            if storage in _WHOLE:
                self._copy_range(node, src, 0, spec.size)
            elif spec.role == "offsets":
                rows = children[0].length if children else None  # lists: their child's rows bound the offsets
                child_range = self._copy_offsets(node, src, base, start, start + n, _OFFSET_WIDTH[storage], rows)
            elif spec.role == "data" and storage in _OFFSET_WIDTH:
                self._copy_range(node, src, child_range[0], child_range[1])
            elif spec.role == "type_ids":
                self._copy_range(node, src, base, start + n)
            elif spec.role == "validity" or dtype.element_bits(1) == 1:
                self._copy_range(node, src, base // 8, spec.size)
            else:
                self._copy_range(node, src, base * dtype.element_bits(1) // 8, spec.size)
        for child_type, child in zip(dtype.children, children):
            node.children.append(self._plan_child(dtype, child_type, child, base, start + n, child_range))
        if dictionary is not None:
            node.dictionary = self.plan(dtype.value_type, dictionary, 0, dictionary.length, dictionary.null_count)
        return node

    def _plan_leaf(self, dtype: DataType, start: int, n: int, buffers: tuple[int, ...], null_count: int,
                   width: int) -> PlannedNode:
        """:meth:`plan` of a node of numbers, bools or strings / binary (``layout.flat_leaf``: its offsets' width,
        0 for fixed-width values; most nodes there are, and a table of many chunks has hundreds): the same
        ranges, without the general walk's buffer specs."""
        end = start + n
        base = start - start % 8
        node = PlannedNode(n, null_count, start - base, [], [], None, dtype)
        self._copy_range(node, buffers[0], base // 8, (end + 7) // 8 if buffers[0] else 0)
        if width == 0:
            bits = dtype.element_bits(1)
            self._copy_range(node, buffers[1], base * bits // 8, (bits * end + 7) // 8)
            return node
        self._copy_range(node, buffers[2], *self._copy_offsets(node, buffers[1], base, start, end, width))
        return node

    def _copy_offsets(self, node: PlannedNode, src: int, base: int, start: int, end: int, width: int,
                      rows: int | None = None) -> tuple[int, int]:
        """Adds offsets [base, end] of the buffer at ``src`` to ``node``, lowered to start at 0 (the values the
        copy will hold at their ends are remembered with it); returns the range of values they point at. Rows
        [start, end) are the node's; an empty node's offsets are copied as they are and point at nothing (they
        say nothing: PyArrow's full validation accepts any). Offsets that would send the copy outside the data
        or the child (``rows`` of it, for lists) raise InvalidArrowError, whatever producer made them."""
        if start == end or not src:
            self._copy_range(node, src, base * width, (end + 1) * width)
            return 0, 0
        first_value, last_value = self._offset(src, base, width), self._offset(src, end, width)
        if not 0 <= first_value <= last_value or (rows is not None and last_value > rows) or not (
                self._prefix_in_order(src, base, start, width)):
            target = f"its child's {rows} rows" if rows is not None else "its data"
            raise InvalidArrowError(f"expected the offsets of rows [{base}, {end}] of a {node.dtype} node in order "
                                    f"within {target}, got {first_value} at row {base} and {last_value} at row {end}"
                                    f" (or out of order before row {start}): not copied or sent")
        self._copy_range(node, src, base * width, (end + 1) * width, (width, first_value) if first_value else None,
                         (width, end - base, last_value - first_value))
        return first_value, last_value

    def _prefix_in_order(self, src: int, base: int, start: int, width: int) -> bool:
        """The offsets from the bitmap byte's first row to the node's first, in order (a receiver checks them:
        arrowdev.core.node_checks). Read where reads are cheap (CPU memory); not from a device, where they would
        cost a read each (arrowdev's own copies start at 0 there; a receiver still checks)."""
        if start - base < 1 or isinstance(self.read, layout.BatchReader):
            return True
        values = np.frombuffer(self.read(src + base * width, (start - base + 1) * width), np.int32 if width == 4
                               else np.int64)
        return bool(values[0] >= 0 and (values[1:] >= values[:-1]).all())

    def _plan_child(self, parent: DataType, dtype: DataType, child: layout.Node, first: int, end: int,
                    offsets_range: tuple) -> PlannedNode:
        rows = layout.LAYOUTS[parent.storage_id].child_rows
        if rows == "offsets":
            lo, hi = offsets_range
        elif rows == "fixed":
            lo, hi = first * parent.fixed_size, end * parent.fixed_size
        elif rows == "same":
            lo, hi = first, end
        else:
            lo, hi = 0, child.length
        return self.plan(dtype, child, lo, hi, child.null_count if (lo, hi) == (0, child.length) else -1)

    def _offset(self, src: int, index: int, width: int) -> int:
        return int.from_bytes(self.read(src + index * width, width), "little", signed=True) if src else 0


class _DryPlanner(Planner):
    """Plans without copying or recording anything: only the reads happen."""

    def _copy_range(self, node: PlannedNode, src: int, first: int, end: int,
                    rebase: tuple[int, int] | None = None, last: tuple[int, int, int] | None = None) -> None:
        node.buffers.append(0)


def prefetch(trees: list[tuple[DataType, layout.Node, int, int, int]], read: layout.Reader) -> None:
    """When ``read`` is a :class:`layout.BatchReader`, fills it with every value that planning ``trees``
    ((type, tree, first row, end row, null count) each) reads: dry plans, each round's missing reads
    fetched in one batch, until a round misses none (one round per level of nesting whose offsets
    decide what is read next). A reader of CPU memory is left alone (its reads cost nothing)."""
    if not isinstance(read, layout.BatchReader):
        return
    planner = _DryPlanner()
    planner.read = read
    while True:
        for dtype, tree, lo, hi, null_count in trees:
            planner.plan(dtype, tree, lo, hi, null_count)
        if not read.fetch():
            return


class Transfer(Planner):
    """One batch of tree copies from ``source`` to ``target``, on one stream, one event."""

    def __init__(self, source: Device, target: Device, stream: Any = None) -> None:
        super().__init__()
        self.source, self.target = source, target
        self.on_host = source.is_cpu_readable and target.is_cpu_readable
        self.gpu = target.id if target.type == "cuda" else source.id
        self.stream = None if self.on_host else runtime.stream_for(self.gpu, stream)
        self.copies: list[_Copy] = []
        self.group: Any = None  # the block the buffers planned now go to (plan_item sets it)
        self._fields: int | None = None  # the next field's index while planning a top-level struct's fields
        self._blocks: dict[Any, _Block] = {}
        self._keep: list[Any] = []  # host memory the copies read besides the sources (set bits of merged bitmaps)

    # ---- planning ------------------------------------------------------------------------------

    def _copy_range(self, node: PlannedNode, src: int, first: int, end: int,
                    rebase: tuple[int, int] | None = None, last: tuple[int, int, int] | None = None) -> None:
        """Adds a buffer holding source bytes [first, end) of the buffer at ``src`` to ``node``: a place
        in the current group's block, filled in when :meth:`run` allocates the blocks. The first and last
        offsets of a copied offsets buffer are remembered where they land (layout.remember): planning the
        copy (to send it, size it, copy it on) then reads nothing from the device."""
        if not src:
            node.buffers.append(0)
            return
        block = self._blocks.get(self.group)
        if block is None:
            block = self._blocks[self.group] = _Block()
        offset = block.reserve(end - first)
        block.places.append((node, len(node.buffers), offset))
        if last is not None:
            width, index, value = last
            block.known += [(offset, bytes(width)),
                            (offset + index * width, value.to_bytes(width, "little", signed=True))]
        node.buffers.append(0)
        if end > first:
            self.copies.append(_Copy(offset, src + first, end - first, rebase, block))

    def plan_item(self, dtype: DataType, tree: layout.Node, lo: int, hi: int, null_count: int,
                  group: Any) -> PlannedNode:
        """:meth:`plan` of one item of a batch, its buffers in ``group``'s block; where the item is a struct
        (a table's record batch, a struct column), each field's buffers in a block of the field's own, so
        that a column of a table is freed with it and its chunks lie together."""
        self.group, self._fields = group, (0 if dtype.storage_id == "struct" else None)
        return self.plan(dtype, tree, lo, hi, null_count)

    def plan_merged(self, dtype: DataType, nodes: list[layout.Node], null_counts: list[int],
                    group: Any) -> PlannedNode | None:
        """One node holding the rows of ``nodes`` (chunks of one column, :func:`mergeable`) one after the other,
        its buffers in ``group``'s block; None where int32 offsets could not address the merged strings."""
        self.group, self._fields = group, None
        nodes = [n for n in nodes if n.length]
        width = layout.flat_leaf(dtype, nodes[0]) if nodes else None
        spans = [self._data_span(dtype, n, width) for n in nodes] if width else []
        if not nodes or (width == 4 and sum(b - a for a, b in spans) > 2**31 - 1):
            return None
        rows = sum(n.length for n in nodes)
        node = PlannedNode(rows, sum(null_counts) if min(null_counts) >= 0 else -1, 0, [], [], None, dtype)
        if any(n.buffers[0] for n in nodes):
            self._merged_buffer(node, [(n.buffers[0] + n.offset // 8 if n.buffers[0] else self._set_bits(n.length),
                                        (n.length + 7) // 8, None) for n in nodes])
        else:
            node.buffers.append(0)
        if width == 0:
            bits = dtype.element_bits(1)
            self._merged_buffer(node, [(n.buffers[1] + n.offset * bits // 8, (n.length * bits + 7) // 8, None)
                                       for n in nodes])
            return node
        pieces, data = [], 0
        for i, (n, (first, last)) in enumerate(zip(nodes, spans)):
            skip = 1 if i else 0  # a later chunk's first offset is the end of the one before it
            pieces.append((n.buffers[1] + (n.offset + skip) * width, (n.length + 1 - skip) * width,
                           (width, first - data) if first != data else None))
            data += last - first
        self._merged_buffer(node, pieces, (width, rows, data))
        self._merged_buffer(node, [(n.buffers[2] + first, last - first, None)
                                   for n, (first, last) in zip(nodes, spans)])
        return node

    def _data_span(self, dtype: DataType, n: layout.Node, width: int) -> tuple[int, int]:
        offsets = n.buffers[1]
        first, last = self._offset(offsets, n.offset, width), self._offset(offsets, n.offset + n.length, width)
        if not 0 <= first <= last:
            raise InvalidArrowError(f"expected the offsets of a {dtype} chunk in order, got {first} at its first row "
                                    f"and {last} after its last: not copied")
        return first, last

    def _set_bits(self, rows: int) -> int:
        """The address of a bitmap of ``rows`` set bits (a chunk without nulls in a merged column that has some)."""
        ones = np.full((rows + 7) // 8, 0xFF, np.uint8)
        self._keep.append(ones)
        return int(ones.ctypes.data)

    def _merged_buffer(self, node: PlannedNode, pieces: list[tuple[int, int, tuple[int, int] | None]],
                       offsets: tuple[int, int, int] | None = None) -> None:
        """One buffer of ``node`` made of ``pieces`` (source address, bytes, rebase) one after the other
        (``offsets``: (width, rows, data bytes): the merged offsets' first and last values, remembered)."""
        block = self._blocks.get(self.group)
        if block is None:
            block = self._blocks[self.group] = _Block()
        place = block.reserve(sum(nbytes for _, nbytes, _ in pieces))
        block.places.append((node, len(node.buffers), place))
        node.buffers.append(0)
        if offsets is not None:
            width, rows, data = offsets
            block.known += [(place, bytes(width)), (place + rows * width, data.to_bytes(width, "little", signed=True))]
        for src, nbytes, rebase in pieces:
            if nbytes:
                self.copies.append(_Copy(place, src, nbytes, rebase, block))
            place += nbytes

    def _plan_child(self, parent: DataType, dtype: DataType, child: layout.Node, first: int, end: int,
                    offsets_range: tuple) -> PlannedNode:
        if self._fields is None:
            return super()._plan_child(parent, dtype, child, first, end, offsets_range)
        group, field_index = self.group, self._fields
        self.group, self._fields = (group, field_index), None  # the field's own subtree stays in its block
        try:
            return super()._plan_child(parent, dtype, child, first, end, offsets_range)
        finally:
            self.group, self._fields = group, field_index + 1

    def _allocate(self) -> None:
        """One allocation per group for the buffers planned in it, each at an aligned place."""
        for block in self._blocks.values():
            block.base, block.owner = self._alloc(block.size)
            for node, index, offset in block.places:
                node.buffers[index] = block.base + offset
                if not node.keep or node.keep[-1] is not block.owner:
                    node.keep.append(block.owner)
            if block.known:
                layout.remember([(block.base + offset, data) for offset, data in block.known], block.owner)
        for c in self.copies:
            c.dst += c.block.base

    def _alloc(self, nbytes: int) -> tuple[int, Any]:
        if self.on_host:  # aligned as device and pinned blocks are (NumPy aligns to 16 or 64 bytes)
            buf = np.empty(nbytes + BLOCK_ALIGNMENT, dtype=np.uint8)
            return buf.ctypes.data + -buf.ctypes.data % BLOCK_ALIGNMENT, buf
        if self.target.type == "cuda":
            buf = memory.DeviceBuffer(nbytes, self.target.id, self.stream)
        else:
            buf = memory.PinnedBuffer(nbytes)
        return buf.ptr, buf

    # ---- execution -----------------------------------------------------------------------------

    def run(self, source_events: list[int], keep_sources: Any) -> runtime.SyncEvent | None:
        """Enqueues every planned copy; returns the event that fires after them (None for a copy
        between host buffers, which is done when this returns)."""
        self._allocate()
        if self.on_host:
            runtime.synchronize_events(source_events)
            for c in self.copies:
                staging.stage(c.dst, c.src, c.nbytes, c.rebase)
            return None
        cp = runtime.cupy()
        runtime.wait_on_events(self.stream, source_events)
        from_device = self.source.type in _DEVICE_MEMORY
        pinned = None
        with cp.cuda.Device(self.gpu):
            if not from_device:
                pinned = self._host_to_device(pinned_source=self.source.type != "cpu")
            elif self.target.type != "cuda":
                self._device_to_host()
            else:
                self._device_to_device()
        done = runtime.SyncEvent(self.stream, self.gpu)
        memory.keep_until(done, pinned, keep_sources, self._keep)
        return done

    def _memcpy(self, dst: int, src: int, nbytes: int, direction: int) -> None:
        runtime.cupy().cuda.runtime.memcpyAsync(dst, src, nbytes, direction, self.stream.ptr)

    def _host_to_device(self, pinned_source: bool) -> Any:
        runtime_api = runtime.cupy().cuda.runtime
        if pinned_source and not any(c.rebase for c in self.copies):  # DMA straight from pinned memory
            for c in self.copies:
                self._memcpy(c.dst, c.src, c.nbytes, runtime_api.memcpyHostToDevice)
            return None
        pieces = [piece for c in self.copies for piece in staging.split(c.dst, c.src, c.nbytes, c.rebase)]
        return staging.host_to_device(pieces, self.gpu, self.stream)

    def _device_to_host(self) -> None:
        runtime_api = runtime.cupy().cuda.runtime
        for c in self.copies:
            self._memcpy(c.dst, c.src, c.nbytes, runtime_api.memcpyDeviceToHost)
        if any(c.rebase for c in self.copies):
            self.stream.synchronize()  # the rebase reads what the copies wrote
            for c in self.copies:
                if c.rebase:
                    staging.rebase_offsets(c.dst, c.nbytes, c.rebase)

    def _device_to_device(self) -> None:
        cp = runtime.cupy()
        for c in self.copies:
            if self.source.id == self.target.id:
                self._memcpy(c.dst, c.src, c.nbytes, cp.cuda.runtime.memcpyDeviceToDevice)
            else:
                runtime.enable_peer_access(self.target.id, self.source.id)  # else the copy goes through the host
                cp.cuda.runtime.memcpyPeerAsync(c.dst, self.target.id, c.src, self.source.id, c.nbytes, self.stream.ptr)
        with self.stream:
            for c in self.copies:
                if c.rebase:
                    width, value = c.rebase
                    dtype = np.int32 if width == 4 else np.int64
                    mem = cp.cuda.UnownedMemory(c.dst, c.nbytes, None, self.target.id)
                    view = cp.ndarray(c.nbytes // width, dtype, cp.cuda.MemoryPointer(mem, 0))
                    view -= dtype(value)

    # ---- results -------------------------------------------------------------------------------

    def build(self, node: PlannedNode, event: runtime.SyncEvent | None) -> Any:
        """The held array for a planned node (children first); the top one carries the event."""
        children = [self.build(child, None) for child in node.children]
        dictionary = self.build(node.dictionary, None) if node.dictionary is not None else None
        keep = node.keep + ([event] if event is not None else [])
        return _capsules.build(node.dtype, node.length, node.null_count, node.offset, node.buffers, children,
                               dictionary, device_type=self.target.code, device_id=self.target.id, keepalive=keep,
                               sync_event=event.address if event is not None else None)


Merge = tuple[DataType, list[Any], list[int], Callable[[int, int], bytes], Any]
"""Chunks of one column to copy into one chunk: (type, held arrays, their null counts, reader, group)."""


def copy_chunks(items: list[tuple[DataType, Any, int, Callable[[int, int], bytes], Any]], source: Device,
                target: Device, stream: Any = None, merges: list[Merge] | None = None) -> list[Any]:
    """Copies held arrays ``(type, array, known null count, reader of its memory, group)`` from
    ``source`` to ``target`` in one batch; the copies of the items of one group (a column's chunks)
    share one allocation, which lives as long as any of them. ``merges`` (host to GPU copies of columns
    :func:`mergeable` says can be merged): each copied into one chunk, returned after the items' copies as a
    list of one array (or, where int32 offsets could not address the merged strings, of one a chunk)."""
    transfer = Transfer(source, target, stream)
    plans: list[Any] = []
    for dtype, held, nulls, read, group in merges or ():
        transfer.read = read
        merged = transfer.plan_merged(dtype, [layout.Node.of(h) for h in held], nulls, group)
        plans.append([merged] if merged is not None else
                     [transfer.plan_item(dtype, layout.Node.of(h), 0, h.length, n, group) for h, n in zip(held, nulls)])
    sources = [item[1] for item in items] + [h for merge in merges or () for h in merge[1]]
    by_reader: dict[int, tuple[Any, list]] = {}
    for dtype, held, nulls, read, _ in items:  # items sharing a batch reader are read in one batch
        by_reader.setdefault(id(read), (read, []))[1].append((dtype, layout.Node.of(held), 0, held.length, nulls))
    for read, trees in by_reader.values():
        prefetch(trees, read)
    for dtype, held, nulls, read, group in items:
        transfer.read = read
        plans.append(transfer.plan_item(dtype, layout.Node.of(held), 0, held.length, nulls, group))
    event = transfer.run([h.sync_event for h in sources], sources)
    merged_plans, plans = plans[:len(merges or ())], plans[len(merges or ()):]
    return [transfer.build(plan, event) for plan in plans] + [[transfer.build(p, event) for p in group_plans]
                                                              for group_plans in merged_plans]
