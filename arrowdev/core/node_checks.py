"""The nodes of Arrow data that arrives from elsewhere (received frames, CUDA IPC descriptions) checked against
what each needs, before anything reads them (issue 30; docs/validation.md, "Received frames").

A header node (the frame format of :mod:`arrowdev.serialize.frames`: ``[length, null count, offset, buffers,
children, dictionary]``, each buffer entry naming a frame) is checked against its type and the frames it names:

- the node's fields are plain data of the right shape: a length and offset (integers, not negative, their sum at
  most 2^62), a null count (-1 or at most the length), buffer entries whose frame indices are integers in range and
  whose rebase entries (offsets only) have the offsets' width and a value that keeps the offsets in their range,
  children and a dictionary as the type has them;
- every frame is at least as large as its node needs, by the layout rules (:data:`arrowdev.core.layout.LAYOUTS`)
  for the node's type, offset and length; children are as long as their parent's rows need, and the rows of every
  column add up to the header's ``rows``;
- the values a reader follows are checked throughout (:mod:`arrowdev.core.value_checks`: in C on host frames,
  with CuPy on device frames): offsets in order and within the data or child (after the rebase), dictionary
  indices, binary views, list views, run ends, union type ids and dense offsets; null counts against the validity
  bitmap (a popcount).

Everything refused raises :class:`~arrowdev.InvalidArrowError` (a ``ValueError``) naming the node's path in the
header (``columns[0][1].children[0]``), the frame and buffer, what was expected and what came. The frames' own
header is checked by :mod:`arrowdev.serialize.checks`, a CUDA IPC description's by :mod:`arrowdev.cuda.ipc_checks`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArrowError
from . import layout
from .types import DataType
from .value_checks import ArrayValues, Frame, HostValues, refuse, union_lengths

MAX_COUNT = 1 << 62  # lengths, offsets and rows: integers an int64 sum of two never overflows
_MAX_REBASE = {4: 2**31 - 1, 8: 2**62}
_MAX_INT64 = 2**63 - 1
_NO_ROWS = "no rows: in order, not negative"
SEQUENCE = (list, tuple)  # msgpack hands lists back as tuples
# buffer entries of each layout kind (core/layout.py's; views: at least 3), as the planner sends them
_BUFFERS = {"null": 0, "fixed": 2, "bytes": 3, "list": 2, "fixed_list": 1, "struct": 1, "sparse": 1, "dense": 2,
            "views": 3, "list_view": 3, "run_end": 0}
_NO_VALIDITY = frozenset(v.kind for v in layout.LAYOUTS.values() if not v.validity)
_LEAVES = frozenset({"fixed", "bytes"})


@dataclass(frozen=True)
class Shape:
    """What a node of one type needs, worked out once per type: its kind (above), the bits per value (fixed
    width) or bytes per offset, children and dictionary shapes, the index's width and sign (dictionaries),
    the list size (fixed-size lists) and type codes (unions)."""

    name: str
    kind: str
    width: int
    children: tuple[Shape, ...]
    dictionary: Shape | None
    signed: bool = True
    fixed_size: int = 0
    codes: tuple[int, ...] = ()
    is_map: bool = False

    @classmethod
    def of(cls, dtype: DataType) -> Shape:
        storage = dtype.storage_id
        rules = layout.LAYOUTS[storage]
        children = tuple(cls.of(child) for child in dtype.children)
        dictionary = None if dtype.value_type is None else cls.of(dtype.value_type)
        # fixed width: bits per value; offsets: bytes per offset (dense unions: 4)
        width = dtype.element_bits(1) if rules.kind == "fixed" else rules.offsets or 4
        codes = ()
        if rules.kind in ("sparse", "dense"):
            codes = tuple(int(c) for c in dtype.format.partition(":")[2].split(",") if c)
        return cls(str(dtype), rules.kind, width, children, dictionary, signed=not storage.startswith("uint"),
                   fixed_size=dtype.fixed_size or 0, codes=codes, is_map=storage == "map")


@functools.lru_cache(maxsize=256)
def schema_of(data: bytes) -> tuple[DataType, Shape]:
    """The type a header's schema bytes describe, and its shape (cached: a stream of partitions repeats one)."""
    import pyarrow as pa

    try:
        schema = pa.ipc.read_schema(pa.py_buffer(data))
        if len(schema) != 1:
            raise refuse("schema", "the IPC schema of one field", f"{len(schema)} fields")
        dtype = DataType.from_arrow(schema.field(0))
        return dtype, Shape.of(dtype)
    except InvalidArrowError:
        raise
    except Exception as e:  # what PyArrow raises for bytes that are not a schema: ArrowInvalid, OSError, ...
        raise refuse("schema", "Arrow IPC schema bytes", f"bytes PyArrow cannot read ({type(e).__name__}: {e})")


def values_for(frames: list[Frame], device_id: int | None, after_current: bool = True) -> Any:
    """What checks the values of ``frames`` ((address, size, on a device) each): the native core on host frames,
    CuPy on device frames (``device_id``: their GPU); frames in both places are refused. ``after_current``: device
    frames may still be written on the device's current stream (received frames name no stream); False where
    nothing in this process wrote them (memory mapped from another process, which waited before exporting)."""
    on_device = [f[2] for f in frames]
    if any(on_device) and not all(d or f[1] == 0 for d, f in zip(on_device, frames)):
        raise refuse("frames", "frames all in host memory or all on a device", "a mix")
    if device_id is None:
        return HostValues()
    _on_one_gpu(frames, device_id)
    return ArrayValues(*device_view(device_id, after_current))


def _on_one_gpu(frames: list[Frame], device_id: int) -> None:
    """Device frames all on GPU ``device_id`` (the array is built there: a kernel would read another GPU's)."""
    from ..gpu import runtime

    for i, (address, size, on_device) in enumerate(frames):
        if on_device and size and address:
            kind, where = runtime.pointer_device(address)
            if kind not in ("cuda", "cuda_managed") or where != device_id:
                raise refuse(f"frame {i}", f"device memory of GPU {device_id} (the other frames')",
                             f"{kind} memory of device {where}")


class _ChunkPath:
    """A chunk's path in the header (``columns[0][3]``), written out only when a refusal names it."""

    __slots__ = ("pattern", "i", "k")

    def __init__(self, pattern: str, i: int, k: int) -> None:
        self.pattern, self.i, self.k = pattern, i, k

    def __str__(self) -> str:
        return self.pattern.format(self.i, self.k)

    def __format__(self, spec: str) -> str:  # f-strings of a path (the general walk's) write it out
        return format(str(self), spec)


def _frame_name(index: int) -> str:
    return f"frame {index}"


def check_columns(header: dict[str, Any], shape: Shape, frames: list[Frame], values: Any,
                  chunk_path: Callable[[int, int], Any] = lambda i, k: _ChunkPath("columns[{}][{}]", i, k),
                  frame_name: Callable[[int], str] = _frame_name) -> None:
    """Every node of every column of a received header (``kind``, ``columns``, ``rows``), against ``frames``
    ((address, size, on a device) each) and the type's ``shape``; the values inside frames are checked by
    ``values`` (:func:`values_for`, or :class:`~arrowdev.core.value_checks.SizesOnly` before memory is mapped).
    Refusals name chunk ``k`` of column ``i`` ``chunk_path(i, k)``, and frame ``j`` ``frame_name(j)``."""
    columns, rows = header["columns"], header["rows"]
    if header["kind"] == "table" and (shape.kind != "struct" or shape.dictionary is not None):
        raise refuse("kind", "a struct schema for a table (its columns' types)", f"a {shape.name} schema")
    shapes = list(shape.children) if header["kind"] == "table" else [shape]
    if len(columns) != len(shapes):
        raise refuse("columns", f"{len(shapes)} columns (the schema's)", f"{len(columns)}")
    walk = _Walk(frames, values, frame_name)
    with values.scope():
        for i, (column_shape, nodes) in enumerate(zip(shapes, columns)):
            if not isinstance(nodes, SEQUENCE):
                raise refuse(f"columns[{i}]", "a list of chunk nodes", type(nodes).__name__)
            total = 0
            for k, node in enumerate(nodes):
                total += walk.node(column_shape, node, chunk_path(i, k))
            if total != rows:
                raise refuse(f"columns[{i}]", f"{rows} rows in all (the header's rows)", f"chunks of {total} rows")
        values.finish()


def _buffer_count_fits(kind: str, buffers: Any) -> bool:
    """The node's buffer entries are as many as its kind has (views: at least 3; a null node may have one null
    pointer, as Polars exports them, which CUDA IPC descriptions keep)."""
    n = _BUFFERS[kind]
    if kind == "views":
        return len(buffers) >= n
    if kind == "null":
        return len(buffers) == 0 or (len(buffers) == 1 and buffers[0] is None)
    return len(buffers) == n


def check_count(value: Any, where: str, what: str, low: int = 0) -> int:
    if type(value) is not int or not low <= value <= MAX_COUNT:
        raise refuse(where, f"{what}: an integer in [{low}, 2^62]", repr(value)[:80])
    return value


@dataclass
class _Node:
    """One header node being checked: its fields, checked as plain data, and where it is."""

    shape: Shape
    path: str
    length: int
    null_count: int
    offset: int
    buffers: Any
    children: Any
    dictionary: Any
    names: Callable[[int], str] = _frame_name

    @property
    def end(self) -> int:
        return self.offset + self.length

    def frame_index(self, index: int) -> int | None:
        """The frame index of buffer ``index`` (once its entry is checked), None for a null pointer."""
        entry = self.buffers[index]
        return None if entry is None else entry[0]

    def where(self, index: int, frame: int | None, role: str) -> _Where:
        return _Where((self.path, self.shape.name, self.length, self.offset, self.names), index, frame, role)


class _Where:
    """Where a refusal is (a node's buffer), written out only when one is raised: a receipt that passes formats
    nothing. ``node``: (path, type name, length, offset, how frames are named)."""

    __slots__ = ("node", "index", "frame", "role")

    def __init__(self, node: tuple, index: int, frame: int | None, role: str) -> None:
        self.node, self.index, self.frame, self.role = node, index, frame, role

    def __str__(self) -> str:
        path, name, length, offset, names = self.node
        at = f"{names(self.frame)}, " if self.frame is not None else ""
        return f"{path}.buffers[{self.index}] ({at}{self.role} of a {name} node of {length} rows at offset {offset})"


class _Walk:
    """Checks header nodes against the frames; value checks go to ``values``."""

    def __init__(self, frames: list[Frame], values: Any, names: Callable[[int], str] = _frame_name) -> None:
        self.frames, self.values, self.names = frames, values, names

    # ---- the node's own fields ----

    def fields(self, shape: Shape, node: Any, path: str) -> _Node:
        if not isinstance(node, SEQUENCE) or len(node) != 6:
            raise refuse(path, "a node of 6 fields [length, null count, offset, buffers, children, dictionary]",
                         repr(node)[:80])
        length, null_count, offset, buffers, children, dictionary = node
        if type(length) is not int or type(offset) is not int or not 0 <= length <= MAX_COUNT - offset \
                or offset < 0:  # and slices of what is received stay below int64's limit
            check_count(length, path, "a length")
            check_count(offset, path, "an offset")
            raise refuse(path, "an offset + length of at most 2^62", offset + length)
        if type(null_count) is not int or not -1 <= null_count <= length:
            raise refuse(path, f"a null count in [-1, {length}] (the length)", repr(null_count)[:80])
        if not isinstance(buffers, SEQUENCE) or not _buffer_count_fits(shape.kind, buffers):
            raise refuse(path, f"{_BUFFERS[shape.kind]} buffer entries for {shape.name}", repr(buffers)[:80])
        if not isinstance(children, SEQUENCE) or len(children) != len(shape.children):
            raise refuse(path, f"{len(shape.children)} children for {shape.name}", repr(children)[:80])
        if (dictionary is None) != (shape.dictionary is None):
            raise refuse(f"{path}.dictionary", "a dictionary node" if shape.dictionary else "none", repr(dictionary)[:80])
        return _Node(shape, path, length, null_count, offset, buffers, children, dictionary, self.names)

    def buffer(self, node: _Node, index: int, role: str, nbytes: int,
               rebase_width: int = 0) -> tuple[Frame | None, int]:
        """The frame of buffer ``index`` (None for a null pointer: no bytes) once it holds ``nbytes``, and the
        value its offsets are lowered by (0 without a rebase entry)."""
        entry = node.buffers[index]
        if entry is None:
            if nbytes > 0:
                raise refuse(node.where(index, None, role), f"at least {nbytes} bytes", "no buffer")
            return None, 0
        if not isinstance(entry, SEQUENCE) or len(entry) not in (1, 3):
            raise refuse(node.where(index, None, role), "a buffer entry [frame] or [frame, width, value]",
                         repr(entry)[:80])
        frame = entry[0]
        if type(frame) is not int or not 0 <= frame < len(self.frames):
            raise refuse(node.where(index, None, role), f"a frame index in [0, {len(self.frames)})", repr(frame)[:80])
        where = node.where(index, frame, role)
        value = self.rebase(entry, rebase_width, where) if len(entry) == 3 else 0
        have = self.frames[frame][1]
        if have < nbytes:
            raise refuse(where, f"at least {nbytes} bytes", have)
        return self.frames[frame], value

    @staticmethod
    def rebase(entry: Any, width: int, where: str) -> int:
        if not width:
            raise refuse(where, "no rebase entry (only string, binary, list and map offsets are rebased)",
                         repr(entry)[:80])
        if type(entry[1]) is not int or entry[1] != width:
            raise refuse(where, f"a rebase of {width}-byte offsets", f"width {entry[1]!r}"[:80])
        if type(entry[2]) is not int or not 0 <= entry[2] <= _MAX_REBASE[width]:
            raise refuse(where, f"a rebase value in [0, {_MAX_REBASE[width]}]", repr(entry[2])[:80])
        return entry[2]

    def validity(self, node: _Node) -> Frame | None:
        """The validity bitmap once it holds the node's bits, or None (then the null count is 0 or unknown)."""
        if node.shape.kind in _NO_VALIDITY:
            expected = node.length if node.shape.kind == "null" else 0
            if node.null_count not in (-1, expected):
                raise refuse(node.path, f"a null count of {expected} for {node.shape.name}", node.null_count)
            return None
        bitmap, _ = self.buffer(node, 0, "validity bitmap", (node.end + 7) // 8 if node.buffers[0] is not None else 0)
        if bitmap is None and node.null_count > 0:
            raise refuse(node.path, "a null count of 0 without a validity bitmap", node.null_count)
        return bitmap

    def null_count(self, node: _Node, bitmap: Frame | None) -> None:
        """The header's null count against the bitmap's (an unknown count, -1, is computed from it later)."""
        if bitmap is not None and node.null_count >= 0 and node.length:
            self.values.nulls(node.where(0, node.frame_index(0), "validity bitmap"), bitmap, node.offset,
                              node.length, node.null_count)

    # ---- nodes ----

    def node(self, shape: Shape, raw: Any, path: str) -> int:
        """Checks one node and its subtree; its length."""
        if shape.kind in _LEAVES and shape.dictionary is None:
            length = self.leaf(shape, raw, path)
            if length is not None:
                return length
        node = self.fields(shape, raw, path)
        validity = self.validity(node)
        getattr(self, "_" + shape.kind)(node, validity)
        self.null_count(node, validity)
        return node.length

    def leaf(self, shape: Shape, raw: Any, path: str) -> int | None:
        """The node's length where it is a node of numbers, bools or strings (the commonest nodes) whose fields and
        frames all fit, its values checked; None where anything does not (the general walk then says what): the
        same checks as the general walk's, without its generality, so a table of many chunks is checked fast."""
        if type(raw) not in SEQUENCE or len(raw) != 6:
            return None
        length, nulls, offset, buffers, children, dictionary = raw
        if (type(length) is not int or type(offset) is not int or type(nulls) is not int or dictionary is not None
                or type(children) not in SEQUENCE or children or type(buffers) not in SEQUENCE
                or len(buffers) != _BUFFERS[shape.kind] or not 0 <= length <= MAX_COUNT - offset or offset < 0
                or not -1 <= nulls <= length):
            return None
        end, frames = offset + length, self.frames
        bitmap = None if buffers[0] is None else self.leaf_frame(buffers[0], (end + 7) // 8)
        if bitmap is False or (bitmap is None and nulls > 0):
            return None
        node = (path, shape.name, length, offset, self.names)
        if shape.kind == "fixed":
            if self.leaf_frame(buffers[1], (shape.width * end + 7) // 8) is False:
                return None
        elif not self.leaf_bytes(shape, buffers, node, end, length):
            return None
        if bitmap is not None and nulls >= 0 and length:
            self.values.nulls(_Where(node, 0, buffers[0][0], "validity bitmap"), bitmap, offset, length, nulls)
        return length

    def leaf_frame(self, entry: Any, nbytes: int) -> Frame | None | bool:
        """The frame of a plain buffer entry holding ``nbytes``; None for a null pointer where none are needed;
        False for anything else."""
        if entry is None:
            return None if nbytes == 0 else False
        if type(entry) not in SEQUENCE or len(entry) != 1 or type(entry[0]) is not int:
            return False
        index = entry[0]
        if not 0 <= index < len(self.frames) or self.frames[index][1] < nbytes:
            return False
        return self.frames[index]

    def leaf_bytes(self, shape: Shape, buffers: Any, node: tuple, end: int, length: int) -> bool:
        """The offsets and data of a string node (its offsets rebased or not) checked as :meth:`_bytes` does;
        False where the general walk is to say what does not fit."""
        width, entry = shape.width, buffers[1]
        value = 0
        if type(entry) in SEQUENCE and len(entry) == 3:
            if entry[1] != width or type(entry[1]) is not int or type(entry[2]) is not int \
                    or not 0 <= entry[2] <= _MAX_REBASE[width]:
                return False
            value, entry = entry[2], entry[:1]
        offsets = self.leaf_frame(entry, width * (end + 1))
        if not offsets:
            return False
        last = self.values.last_offset(offsets, width, end) if length else None
        data = self.leaf_frame(buffers[2], 0 if last is None else max(last - value, 0))
        if data is False:
            return False
        size = data[1] if data else 0
        self.values.offsets(_Where(node, 1, entry[0], "offsets"), offsets, width, 0, end + 1, value,
                            value + size if length else _MAX_INT64, "the data's bytes" if length else _NO_ROWS)
        return True

    def child(self, node: _Node, i: int, need: int = 0) -> int:
        length = self.node(node.shape.children[i], node.children[i], f"{node.path}.children[{i}]")
        if length < need:
            raise refuse(f"{node.path}.children[{i}]", f"at least {need} rows (the parent's rows need them)", length)
        return length

    def _null(self, node: _Node, validity: Any) -> None:
        pass

    def _struct(self, node: _Node, validity: Any) -> None:
        for i in range(len(node.shape.children)):
            self.child(node, i, node.end)

    def _fixed_list(self, node: _Node, validity: Any) -> None:
        self.child(node, 0, node.end * node.shape.fixed_size)

    def _fixed(self, node: _Node, validity: Frame | None) -> None:
        shape = node.shape
        data, _ = self.buffer(node, 1, "data", (shape.width * node.end + 7) // 8)
        if shape.dictionary is None:
            return
        size = self.node(shape.dictionary, node.dictionary, f"{node.path}.dictionary")
        if node.length:
            self.values.indices(node.where(1, node.frame_index(1), "dictionary indices"), data, shape.width // 8,
                                shape.signed, node.offset, node.length, size, validity, node.offset)

    def offsets(self, node: _Node, index: int, limit: int, target: str) -> None:
        """An offsets buffer (rebased or not: [frame, width, value] lowers them by value) checked within
        [0, limit] after the rebase, in order, from the frame's first offset to the node's last: a sender's frame
        starts at most 7 rows before the node's offset, at a byte of the bitmap, and those offsets are in order
        too (its planner checks them), so a rebase value off by any amount is refused. An empty node's offsets
        point at nothing and may be past the limit (PyArrow's full validation accepts that), but are in order and
        not negative all the same (an empty slice of the column starts at offset 0: column.slice)."""
        width = node.shape.width  # offsets are needed even for no rows: PyArrow's importer refuses a null pointer
        frame, value = self.buffer(node, index, "offsets", width * (node.end + 1), rebase_width=width)
        high = value + limit if node.length else _MAX_INT64
        self.values.offsets(node.where(index, node.frame_index(index), "offsets"), frame, width, 0, node.end + 1,
                            value, high, target if node.length else _NO_ROWS)

    def _bytes(self, node: _Node, validity: Any) -> None:
        width = node.shape.width
        offsets, value = self.buffer(node, 1, "offsets", width * (node.end + 1), width)
        last = self.values.last_offset(offsets, width, node.end) if node.length and offsets else None
        # where the last offset is at hand (host memory), the data frame's size is checked against it first
        data, _ = self.buffer(node, 2, "data", 0 if last is None else max(last - value, 0))
        size = data[1] if data else 0
        self.offsets(node, 1, size, "the data's bytes")

    def _list(self, node: _Node, validity: Any) -> None:
        length = self.child(node, 0)
        self.offsets(node, 1, length, "the child's rows")
        if node.shape.is_map:
            self.map_keys(node)

    def map_keys(self, node: _Node) -> None:
        """A map's entries and their keys have no nulls (PyArrow's rules: its map import aborts the process on null
        entries): the header's counts, else the bitmaps' (the counts the header gives are the bitmaps' already)."""
        entries = node.children[0]
        self.no_nulls(entries, f"{node.path}.children[0]", "map entries")
        self.no_nulls(entries[4][0], f"{node.path}.children[0].children[0]", "map keys")

    def no_nulls(self, raw: Any, path: str, what: str) -> None:
        """A checked node (``raw``, the header's) holds no null."""
        length, null_count, offset, buffers = raw[:4]
        if null_count > 0:
            raise refuse(path, f"{what} without nulls", f"a null count of {null_count}")
        bitmap = buffers[0] if buffers else None
        if bitmap is not None and null_count < 0 and length:
            self.values.nulls(f"{path}.buffers[0] ({self.names(bitmap[0])}, validity bitmap of {what})",
                              self.frames[bitmap[0]], offset, length, 0)

    def _list_view(self, node: _Node, validity: Any) -> None:
        width, end = node.shape.width, node.end
        offsets, _ = self.buffer(node, 1, "offsets", width * end)
        sizes, _ = self.buffer(node, 2, "sizes", width * end)
        length = self.child(node, 0)
        if node.length:
            self.values.list_views(node.where(1, node.frame_index(1), "offsets and sizes"), offsets, sizes, width,
                                   node.offset, node.length, length)

    def _views(self, node: _Node, validity: Frame | None) -> None:
        views, _ = self.buffer(node, 1, "views", 16 * node.end)
        n_data = len(node.buffers) - 3
        sizes_frame, _ = self.buffer(node, len(node.buffers) - 1, "variadic buffer sizes", 8 * n_data)
        frames = [self.buffer(node, 2 + k, f"variadic data buffer {k}", 0)[0] for k in range(n_data)]
        sizes = self.values.variadic_sizes(sizes_frame, n_data) if n_data else np.zeros(0, np.int64)
        if sizes is None:  # not readable yet (SizesOnly)
            return
        for k, (declared, frame) in enumerate(zip(sizes.tolist(), frames)):
            have = frame[1] if frame else 0
            if not 0 <= declared <= have:
                raise refuse(node.where(2 + k, node.frame_index(2 + k), "variadic data"),
                             f"at least the {declared} bytes its size says", have)
        if node.length:
            self.values.views(node.where(1, node.frame_index(1), "views"), views, node.offset, node.length, sizes,
                              validity, node.offset)

    def _sparse(self, node: _Node, validity: Any) -> None:
        ids, _ = self.buffer(node, 0, "type ids", node.end)
        lengths = [self.child(node, i, node.end) for i in range(len(node.shape.children))]
        self.union_values(node, ids, None, lengths)

    def _dense(self, node: _Node, validity: Any) -> None:
        ids, _ = self.buffer(node, 0, "type ids", node.end)
        offsets, _ = self.buffer(node, 1, "offsets", 4 * node.end)
        lengths = [self.child(node, i) for i in range(len(node.shape.children))]
        self.union_values(node, ids, offsets, lengths)

    def union_values(self, node: _Node, ids: Frame | None, offsets: Frame | None, lengths: list[int]) -> None:
        codes = node.shape.codes
        if len(codes) != len(lengths) or not all(0 <= c < 128 for c in codes):
            raise refuse(node.path, "a union's type codes in [0, 128), one per child", codes)
        if node.length:
            where = node.where(0, node.frame_index(0), "type ids")
            if offsets is not None:
                where = f"{where} and buffers[1] ({node.names(node.frame_index(1))}, offsets)"
            self.values.union(where, ids, offsets, node.offset, node.length, union_lengths(codes, lengths))

    def _run_end(self, node: _Node, validity: Any) -> None:
        ends_shape = node.shape.children[0]
        runs = self.child(node, 0)
        self.child(node, 1, runs)
        ends = self.fields(ends_shape, node.children[0], f"{node.path}.children[0]")
        where = ends.where(1, ends.frame_index(1), "run ends")
        if ends.null_count > 0:
            raise refuse(where, "run ends without nulls", f"a null count of {ends.null_count}")
        if ends.null_count < 0 and ends.buffers[0] is not None and runs:
            self.values.nulls(ends.where(0, ends.frame_index(0), "validity bitmap of run ends"),
                              self.frames[ends.frame_index(0)], ends.offset, runs, 0)
        frame = self.frames[ends.frame_index(1)] if ends.buffers[1] is not None else None
        if frame is None and (runs or node.end):
            raise refuse(where, f"run ends up to row {node.end}", "no buffer")
        if runs or node.end:
            self.values.run_ends(where, frame, ends_shape.width // 8, ends.offset, runs, node.end)


def device_view(device_id: int, after_current: bool = True) -> tuple[Any, Any, Any]:
    """(CuPy, a function viewing ``count`` elements of ``dtype`` of a device frame from element ``start``, the
    scope the checks run in: the frames' GPU current, arrowdev's stream there, after the work queued on the
    device's current stream where ``after_current``): what :class:`~arrowdev.core.value_checks.ArrayValues`
    checks device frames with."""
    from ..gpu import runtime

    cp = runtime.cupy()

    def view(frame: Frame, dtype: Any, start: int, count: int) -> Any:
        itemsize = np.dtype(dtype).itemsize
        memory = cp.cuda.UnownedMemory(frame[0] + start * itemsize, count * itemsize, None, device_id)
        return cp.ndarray(count, dtype, cp.cuda.MemoryPointer(memory, 0))

    # received frames name no stream: the checks (and every later read on arrowdev's stream) wait for the work
    # queued on the device's current stream, where a frame's producer (CuPy, distributed) wrote it unless it waited
    return cp, view, lambda: runtime.on_stream(device_id, after_current=after_current)
