"""What each Arrow type's buffers are, how large they are, and how many nulls an array has.

One set of rules serves every type-aware feature: buffer sizes (``ArrowColumn.buffers``,
``nbytes``), null counts, and the host/device copies, which copy just the bytes in range. (How many
buffers and children a node has is checked on import by the native core: capsules/check.c.) The
rules read memory only through a ``read(address, nbytes) -> bytes`` function, so they work the
same on CPU and device memory.

Why not nanoarrow's ``ArrowArrayView``: it computes the same sizes, but reads the offsets
buffers in place, which only works for CPU memory. For CPU data, full validation (offsets
monotonic and in range) is left to PyArrow's ``validate(full=True)``.
"""

from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple, cast

import numpy as np

from .types import DataType, Device

Reader = Callable[[int, int], bytes]


@dataclass(frozen=True)
class Layout:
    """What one storage type keeps in its buffers, and how the layers above treat it. :data:`LAYOUTS` holds one
    per storage type; copies (``cuda/transfer.py``), serialization, export (``core/to_arrow.py``) and
    interop read it, and ``tests/test_layouts.py`` checks it against the native core's ``LayoutKind``."""

    kind: str  # the native core's LayoutKind (capsules/format.h) without its prefix, in snake case
    offsets: int = 0  # bytes per offset (strings, binary, lists, list views), else 0
    validity: bool = True  # the node has a validity bitmap (buffer 0)
    # how a copy keeps only the rows in range: "rows" trims every buffer to them from the byte holding the first
    # row's bit (the node's offset keeps the bit position); "from_first_row" from the first row itself (sparse
    # union type ids); "whole" copies the node as it is (views, list views, dense unions, run ends, nulls)
    cut: str = "rows"
    # the rows of its children a node uses: "offsets" (read off its offsets), "fixed" (fixed_size per row), "same"
    # (struct fields and sparse union children), "all" (every row: the node is copied whole), "none" (no child)
    child_rows: str = "none"
    family: str | None = None  # types one representation change apart (requested_schema honours): same family
    pyarrow_stand_in: tuple[str, str] | None = None  # (format, a format PyArrow imports with the same buffers)


_FIXED = Layout("fixed")
LAYOUTS: dict[str, Layout] = {
    "na": Layout("null", validity=False, cut="whole"),
    "bool": _FIXED,
    **dict.fromkeys(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "half_float", "float",
                     "double", "decimal32", "decimal64", "decimal128", "decimal256", "fixed_size_binary",
                     "interval_month_day_nano"), _FIXED),
    "interval_months": Layout("fixed", pyarrow_stand_in=("tiM", "i")),
    "interval_day_time": Layout("fixed", pyarrow_stand_in=("tiD", "w:8")),
    "string": Layout("bytes", offsets=4, family="string"),
    "large_string": Layout("bytes", offsets=8, family="string"),
    "binary": Layout("bytes", offsets=4, family="binary"),
    "large_binary": Layout("bytes", offsets=8, family="binary"),
    "string_view": Layout("views", cut="whole", family="string"),
    "binary_view": Layout("views", cut="whole", family="binary"),
    "list": Layout("list", offsets=4, child_rows="offsets", family="list"),
    "large_list": Layout("list", offsets=8, child_rows="offsets", family="list"),
    "map": Layout("list", offsets=4, child_rows="offsets"),
    "list_view": Layout("list_view", offsets=4, cut="whole", child_rows="all"),
    "large_list_view": Layout("list_view", offsets=8, cut="whole", child_rows="all"),
    "fixed_size_list": Layout("fixed_list", child_rows="fixed"),
    "struct": Layout("struct", child_rows="same"),
    "sparse_union": Layout("sparse", validity=False, cut="from_first_row", child_rows="same"),
    "dense_union": Layout("dense", validity=False, cut="whole", child_rows="all"),
    "run_end_encoded": Layout("run_end", validity=False, cut="whole", child_rows="all"),
}


def layout_of(dtype: DataType) -> Layout:
    """The layout of a type's storage (a dictionary's: of its indices)."""
    return LAYOUTS[dtype.storage_id]


_NO_VALIDITY = frozenset(k for k, v in LAYOUTS.items() if not v.validity)


class Node(NamedTuple):
    """One node of a held array's tree as the native core describes it (``CDeviceArray.tree()``):
    its length, offset, null count (-1: not known), buffer addresses, child nodes and dictionary node.

    >>> import pyarrow as pa, arrowdev as ad
    >>> from arrowdev.core import chunks as _chunked
    >>> node = Node.of(_chunked.chunks(ad.column(pa.array(["a", None])))[0])
    >>> node.length, node.null_count, len(node.buffers), node.children, node.dictionary
    (2, 1, 3, (), None)
    """

    length: int
    offset: int
    null_count: int
    buffers: tuple[int, ...]
    children: tuple[Node, ...]
    dictionary: Node | None

    @classmethod
    def of(cls, held: Any) -> Node:
        """The tree of a held array (``CDeviceArray``)."""
        return cls._from_tuple(held.tree())

    @classmethod
    def _from_tuple(cls, tree: tuple[Any, ...]) -> Node:
        length, offset, null_count, buffers, children, dictionary = tree
        if not children and dictionary is None:  # most nodes: no generator to run
            return cls(length, offset, null_count, tuple(buffers), (), None)
        return cls(length, offset, null_count, tuple(buffers), tuple(cls._from_tuple(c) for c in children),
                   None if dictionary is None else cls._from_tuple(dictionary))


def read_cpu(address: int, nbytes: int) -> bytes:
    """Reads CPU memory at an address (the CPU ``Reader``)."""
    return ctypes.string_at(address, nbytes) if nbytes else b""


# Values of device memory known without reading it: what a copy wrote there (the first and last offset of
# each offsets buffer it rebased), kept while the memory's owner lives; each entry (address, nbytes) ->
# (weak reference to the owner, bytes). Planning a copied table (to send it, size it, copy it on) then reads
# nothing from the device. Arrow buffers are immutable, so what was written stays true while the owner lives.
_remembered: dict[tuple[int, int], tuple[Any, bytes]] = {}


def remember(values: list[tuple[int, bytes]], owner: Any) -> None:
    """Records that device memory at each address holds those bytes while ``owner`` (the allocation
    they lie in) lives; the records go with the owner (before its memory can be reused)."""
    keys = [(address, len(data)) for address, data in values]

    def forget(_: Any) -> None:
        for key in keys:
            entry = _remembered.get(key)
            if entry is not None and entry[0] is ref:
                _remembered.pop(key, None)
    ref = weakref.ref(owner, forget)
    for key, (_, data) in zip(keys, values):
        _remembered[key] = (ref, data)


def _recalled(address: int, nbytes: int) -> bytes | None:
    entry = _remembered.get((address, nbytes))
    return entry[1] if entry is not None and entry[0]() is not None else None


class BatchReader:
    r"""A ``Reader`` of memory that is slow to read one value at a time (a device: each read is a
    synchronous copy). It answers from what :meth:`fetch` read or :func:`remember` recorded; an address not
    read yet is recorded and answered with zeros. Planning twice, with a :meth:`fetch` in between, reads
    everything in one batch; planners repeat until a round fetches nothing (once per level of nesting whose
    offsets decide what is read next): ``cuda.transfer.prefetch`` before a copy, ``_serialize`` for frames.

    >>> reader = BatchReader(lambda requests: [bytes([7]) * n for _, n in requests])
    >>> reader(0x1000, 4), reader.fetch(), reader(0x1000, 4), reader.fetch()
    (b'\x00\x00\x00\x00', True, b'\x07\x07\x07\x07', False)
    """

    def __init__(self, read_many: Callable[[list[tuple[int, int]]], list[bytes]]) -> None:
        self._read_many = read_many
        self._known: dict[tuple[int, int], bytes] = {}
        self._missing: dict[tuple[int, int], None] = {}  # insertion-ordered set

    def __call__(self, address: int, nbytes: int) -> bytes:
        if nbytes == 0:
            return b""
        known = self._known.get((address, nbytes))
        if known is None:
            known = _recalled(address, nbytes)
        if known is not None:
            return known
        self._missing[(address, nbytes)] = None
        return bytes(nbytes)

    def fetch(self) -> bool:
        """Reads every recorded address in one batch; False when none was missing."""
        if not self._missing:
            return False
        requests = list(self._missing)
        self._missing.clear()
        self._known.update(zip(requests, self._read_many(requests)))
        return True


def _read_int(read: Reader, address: int, index: int, width: int) -> int:
    return int.from_bytes(read(address + index * width, width), "little", signed=True)


class BufferSpec(NamedTuple):
    """One buffer of a node: its role, and its size in bytes for the node's offset + length (a tuple:
    planners make one per buffer of every chunk they walk)."""

    role: str  # validity, data, offsets, sizes, views, type_ids, variadic_data, variadic_sizes
    size: int


def buffer_specs(dtype: DataType, offset: int, length: int, buffers: tuple[int, ...],
                 read: Reader) -> list[BufferSpec]:
    """The role and byte size of each buffer of one node, for elements [0, offset + length).

    Sizes count from the buffer's start, so a slice (offset > 0) still covers what it needs.
    ``read`` is called only for variable-size types (the last offset, the variadic sizes).
    """
    storage, end = dtype.storage_id, offset + length
    bitmap = (end + 7) // 8
    validity = [] if storage in _NO_VALIDITY else [BufferSpec("validity", bitmap if buffers[0] else 0)]
    kind = LAYOUTS[storage].kind
    if kind in ("null", "run_end", "struct", "fixed_list"):
        return validity
    if kind == "sparse":
        return [BufferSpec("type_ids", end)]
    if kind == "dense":
        return [BufferSpec("type_ids", end), BufferSpec("offsets", 4 * end)]
    if kind in ("bytes", "list"):
        width = LAYOUTS[storage].offsets
        specs = validity + [BufferSpec("offsets", width * (end + 1) if buffers[1] else 0)]
        if kind == "list":
            return specs
        data_end = _read_int(read, buffers[1], end, width) if buffers[1] and end else 0
        return specs + [BufferSpec("data", data_end)]
    if kind == "list_view":
        width = LAYOUTS[storage].offsets
        return validity + [BufferSpec("offsets", width * end), BufferSpec("sizes", width * end)]
    if kind == "views":
        n_variadic = len(buffers) - 3
        raw = read(buffers[-1], 8 * n_variadic) if n_variadic else b""
        sizes = np.frombuffer(raw, dtype="<i8").tolist()
        return (validity + [BufferSpec("views", 16 * end)]
                + [BufferSpec("variadic_data", s) for s in sizes]
                + [BufferSpec("variadic_sizes", 8 * n_variadic)])
    bits = dtype.element_bits(1)
    return validity + [BufferSpec("data", (bits * end + 7) // 8)]


_BINARY_WIDTH = {k: v.offsets for k, v in LAYOUTS.items() if v.kind == "bytes"}


def flat_leaf(dtype: DataType, tree: Node) -> int | None:
    """For a node of numbers, bools or strings / binary (no children, no dictionary: the commonest nodes):
    0 where its values are fixed-width, its offsets' width (4 or 8) for strings; None for any other node."""
    storage = dtype.storage_id
    if tree.children or tree.dictionary is not None or storage in _NO_VALIDITY:
        return None
    width = _BINARY_WIDTH.get(storage)
    if width is not None:
        return width if len(tree.buffers) == 3 else None
    return 0 if len(tree.buffers) == 2 and LAYOUTS[storage].kind == "fixed" else None


def row_pieces(dtype: DataType, tree: Node, piece_bytes: int) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) of a node in CPU memory whose buffers, as a planner copies them, each hold at most
    ``piece_bytes`` bytes (pieces after the first start at rows that are multiples of 8, so bitmaps are cut
    at whole bytes; a piece is at least 8 rows, so strings longer than ``piece_bytes`` pass it). Only nodes
    of numbers, bools and strings / binary are cut; any other node is one piece.

    >>> import pyarrow as pa, arrowdev as ad
    >>> from arrowdev.core import chunks as _chunked
    >>> held = _chunked.chunks(ad.column(pa.array(range(40), pa.int64())))[0]
    >>> row_pieces(ad.DataType.from_arrow(pa.int64()), Node.of(held), 128)
    [(0, 16), (16, 32), (32, 40)]
    """
    buffers, n, width = tree.buffers, tree.length, flat_leaf(dtype, tree)
    if width is None:
        return [(0, n)]
    start, end = tree.offset, tree.offset + n
    base = start - start % 8  # where a planner starts the first piece's buffers
    if width == 0:  # fixed width: the same number of rows in every piece
        rows = max(8, piece_bytes * 8 // dtype.element_bits(1) // 8 * 8)
        cuts = list(range(base + rows, end, rows))
    elif not buffers[1]:
        return [(0, n)]
    else:  # strings: as many rows as the data bytes and the offsets allow
        count = end - base + 1
        raw = (ctypes.c_uint8 * (count * width)).from_address(buffers[1] + base * width)
        offsets = np.frombuffer(memoryview(raw), dtype=np.int32 if width == 4 else np.int64)  # a view: no copy
        most_rows = max(8, (piece_bytes // width - 1) // 8 * 8)
        cuts, cut = [], base
        while True:
            fits = base + int(np.searchsorted(offsets, offsets[cut - base] + piece_bytes, "right")) - 1
            cut = max(cut + 8, min(cut + most_rows, fits // 8 * 8))
            if cut >= end:
                break
            cuts.append(cut)
    bounds = [start, *cuts, end]
    return [(lo - start, hi - start) for lo, hi in zip(bounds, bounds[1:])]


def count_set_bits(bitmap: bytes, bit_offset: int, length: int) -> int:
    """Set bits among bits [bit_offset, bit_offset + length) of a little-endian bitmap."""
    if length == 0:
        return 0
    data = np.frombuffer(bitmap, dtype=np.uint8)
    end = bit_offset + length
    first, last = bit_offset // 8, (end - 1) // 8
    head = int(data[first]) >> (bit_offset % 8)
    if first == last:
        return (head & ((1 << length) - 1)).bit_count()
    tail = int(data[last]) & ((1 << (end - 8 * last)) - 1)
    middle = int(np.bitwise_count(data[first + 1:last]).sum(dtype=np.int64))
    return head.bit_count() + middle + tail.bit_count()


def null_count_unread(dtype: DataType, length: int, validity: int) -> int | None:
    """The null count of one node when its type or a missing bitmap decides it, else None."""
    storage = dtype.storage_id
    if storage == "na":
        return length
    if storage in _NO_VALIDITY or not validity or length == 0:
        return 0
    return None


def count_in_place(address: int, bit_offset: int, length: int) -> int:
    """Set bits among bits [bit_offset, bit_offset + length) of a bitmap in CPU memory, counted where it is by the
    native popcount (no copy of it into bytes)."""
    from .. import _capsules

    return int(_capsules.count_set(address, bit_offset, length))


def null_count(dtype: DataType, offset: int, length: int, validity: int, read: Reader) -> int:
    """The null count of one node, computed from its validity bitmap where it has one: counted where the bitmap
    is when the reader can (CPU memory; a reader's ``count_set_bits``, chunks.py's on a GPU), else read and
    counted here."""
    known = null_count_unread(dtype, length, validity)
    if known is not None:
        return known
    count = count_in_place if read is read_cpu else getattr(read, "count_set_bits", None)
    if count is not None:
        return length - count(validity, offset, length)
    first, last = offset // 8, (offset + length + 7) // 8
    return length - count_set_bits(read(validity + first, last - first), offset - 8 * first, length)


@dataclass(frozen=True)
class BufferInfo:
    """One buffer of one node of one chunk: where it is and how many bytes the node uses."""

    chunk: int
    node: str  # "" for the top node, else a path such as "children[0].dictionary"
    index: int
    role: str  # validity, data, offsets, sizes, views, type_ids, variadic_data, variadic_sizes
    address: int
    size: int
    device: Device


def node_null_counts(dtype: DataType, tree: Node, read: Reader | None) -> Iterator[int]:
    """The null count of a node and of every node below it, in tree order (the node, its
    children's subtrees, its dictionary's): the producer's where it gave one, else computed from
    the type and validity bitmap; -1 where that needs a read and ``read`` is None."""
    length, offset, count, buffers, children, dictionary = tree
    if count < 0:
        validity = buffers[0] if buffers else 0
        unread = null_count_unread(dtype, length, validity)
        if unread is not None:
            count = unread
        else:
            count = -1 if read is None else null_count(dtype, offset, length, validity, read)
    yield count
    for child_type, child in zip(dtype.children, children):
        yield from node_null_counts(child_type, child, read)
    if dictionary is not None:
        yield from node_null_counts(cast(DataType, dtype.value_type), dictionary, read)


def node_buffers(dtype: DataType, tree: Node, path: str, chunk: int, read: Reader,
                 device: Device) -> Iterator[BufferInfo]:
    """The buffers of a node and of every node below it, in tree order."""
    length, offset, _, buffers, children, dictionary = tree
    for index, (spec, address) in enumerate(zip(buffer_specs(dtype, offset, length, buffers, read), buffers)):
        yield BufferInfo(chunk, path, index, spec.role, address, spec.size if address else 0, device)
    sep = "." if path else ""
    for i, (child_type, child) in enumerate(zip(dtype.children, children)):
        yield from node_buffers(child_type, child, f"{path}{sep}children[{i}]", chunk, read, device)
    if dictionary is not None:
        yield from node_buffers(cast(DataType, dtype.value_type), dictionary, f"{path}{sep}dictionary", chunk, read, device)
