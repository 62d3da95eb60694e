"""The copy planner of arrowdev.cuda.transfer, run host-to-host so it is checked without a GPU:
every type, whole and sliced, copies equal values, and a slice copies only its own bytes."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev.core import chunks as _chunked, layout
from arrowdev.cuda import transfer
from support.samples import CASES, LAYOUTS, source_of

# Layouts whose children are referenced out of order keep their offset and copy from the start.
WHOLE_EXTENT = {"null", "run_end_encoded", "dense_union", "list_view", "large_list_view", "string_view",
                "binary_view"}


def _compact(col: ad.ArrowColumn, read: layout.Reader | None = None) -> ad.ArrowColumn:
    read = read or _chunked.read(col)
    items = [(col.type, chunk, _chunked.chunk_null_count(col, i), read, 0)
             for i, chunk in enumerate(_chunked.chunks(col))]
    chunks = transfer.copy_chunks(items, ad.Device.cpu(), ad.Device.cpu())
    return ad.ArrowColumn(col.type, chunks)


def _depth(dtype: ad.DataType) -> int:
    children = list(dtype.children) + ([dtype.value_type] if dtype.value_type is not None else [])
    return 1 + max((_depth(c) for c in children), default=0)


class _CountingBatches(layout.BatchReader):
    """A batch reader of CPU memory (as a device's is used) that counts its batches."""

    def __init__(self) -> None:
        super().__init__(self._read_cpu)
        self.batches = 0

    def _read_cpu(self, requests):
        self.batches += 1
        return [layout.read_cpu(address, nbytes) for address, nbytes in requests]


@pytest.mark.parametrize("reads", ["direct", "batched"])
@pytest.mark.parametrize("layout_name", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_planned_copy_equals_the_source(name, layout_name, reads, balanced):
    """Read directly, or in batches (what device memory gets): the same copy. Batched, every value the plan
    reads is fetched before it (no read misses), in at most one batch per level of the type."""
    source = source_of(name, layout_name)
    col = ad.column(source)
    batches = _CountingBatches() if reads == "batched" else None
    copy = _compact(col, batches)
    if batches is not None:
        assert not batches.fetch()  # nothing was answered with a placeholder
        assert batches.batches <= _depth(col.type)
        if col.type.storage_id in ("string", "large_string", "binary", "large_binary"):
            assert batches.batches == 1  # every chunk's offsets in one batch
    want = source if isinstance(source, pa.ChunkedArray) else pa.chunked_array([source])
    got = copy.to_pyarrow()
    assert got.equals(want), (got, want)
    assert copy.null_count == want.null_count
    copy.validate(full=True)
    src_addresses = {b.address for b in col.buffers if b.address}
    assert not src_addresses & {b.address for b in copy.buffers if b.address}  # a real copy


@pytest.mark.parametrize("name", sorted(set(CASES) - WHOLE_EXTENT))
def test_a_slice_copies_only_its_own_rows(name):
    arr = CASES[name]
    def copied_bytes(col):  # a dictionary is copied whole: count the rows' own buffers
        return sum(b.size for b in _compact(col).buffers if "dictionary" not in b.node)

    whole = copied_bytes(ad.column(arr))
    tail = copied_bytes(ad.column(arr.slice(len(arr) - 3)))
    assert tail < whole / 2, (tail, whole)
    sliced = _compact(ad.column(arr.slice(9, 5)))
    assert _chunked.chunks(sliced)[0].offset == 9 % 8 or name == "sparse_union"
    assert sliced.to_pyarrow().equals(pa.chunked_array([arr.slice(9, 5)]))


class _RangePlanner(transfer.Planner):
    """Records every range a plan hands to ``_copy_range``, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.ranges: list[tuple] = []

    def _copy_range(self, node, src, first, end, rebase=None, last=None):
        self.ranges.append((src, first, end, rebase, last))
        node.buffers.append(src)


@pytest.mark.parametrize("layout_name", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_leaf_shortcut_plans_what_the_general_walk_plans(name, layout_name, monkeypatch):
    """Nodes of numbers, bools and strings are planned without the general walk (a table of many chunks
    has hundreds of them): the same ranges, rebases, remembered offsets and nodes, whole, sliced and chunked."""
    col = ad.column(source_of(name, layout_name))
    plans = []
    for general in (False, True):
        if general:  # no node is a flat leaf: the general walk for every node
            monkeypatch.setattr(layout, "flat_leaf", lambda dtype, tree: None)
        planner = _RangePlanner()
        nodes = [planner.plan(col.type, layout.Node.of(held), 0, held.length, -1)
                 for held in _chunked.chunks(col)]
        plans.append((planner.ranges, [_node_fields(node) for node in nodes]))
    assert plans[0] == plans[1]
    assert plans[0][0] or len(col) == 0 or name == "null"


def _node_fields(node: transfer.PlannedNode) -> tuple:
    return (node.length, node.null_count, node.offset, tuple(node.buffers),
            tuple(_node_fields(c) for c in node.children),
            None if node.dictionary is None else _node_fields(node.dictionary))


def test_rebased_offsets_start_at_zero():
    # A copy keeps the slice's bit position in its first byte (offset % 8), so rows 8.. are
    # exactly what a slice at 8 copies.
    arr = pa.array(["aa", "bbb", "x", "y", "z", "w", "v", "u", "c", "dddd", None, "ee"]).slice(8, 3)
    copy = _compact(ad.column(arr))
    offsets = next(b for b in copy.buffers if b.role == "offsets")
    data = next(b for b in copy.buffers if b.role == "data")
    first = int.from_bytes(layout.read_cpu(offsets.address, 4), "little")
    assert first == 0
    assert data.size == len("c") + len("dddd")
    assert copy.to_pylist() == ["c", "dddd", None]


def test_a_copied_tables_columns_each_lie_in_one_block_of_their_own():
    """A table copied as record batches (a struct column of batches, what ``to_device`` copies): each
    column's buffers, over every batch, lie in one allocation of the column's own, at aligned places, back
    to back (a transport sends each column as one frame; dropping a column frees its memory)."""
    table = pa.table({"a": pa.array([1, None, 3] * 50), "s": pa.array(["x", "yy", None] * 50),
                      "l": pa.array([[1], [], None] * 50, pa.list_(pa.int16()))})
    batches = ad.column(pa.chunked_array(table.to_batches(max_chunksize=40)))
    batches = ad.ArrowColumn(ad.DataType.from_arrow(pa.struct(table.schema)), _chunked.chunks(batches))
    copy = _compact(batches)
    assert copy.to_pyarrow().equals(batches.to_pyarrow())
    spans: dict[str, list[tuple[int, int]]] = {}
    for b in copy.buffers:
        if b.address and b.node:
            assert b.address % transfer.BLOCK_ALIGNMENT == 0, b
            column = b.node.split(".")[0]  # children[i]: the table's column i, its own children with it
            spans.setdefault(column, []).append((b.address, b.size))
    assert sorted(spans) == ["children[0]", "children[1]", "children[2]"]
    extents = []
    for column, places in spans.items():
        places.sort()
        for (address, size), (following, _) in zip(places, places[1:]):
            assert 0 <= following - (address + size) < transfer.BLOCK_ALIGNMENT, (column, places)  # back to back
        extents.append((places[0][0], places[-1][0] + places[-1][1]))
    extents.sort()
    assert all(end <= start for (_, end), (start, _) in zip(extents, extents[1:]))  # blocks apart


def test_copies_of_two_columns_lie_in_blocks_of_their_own():
    rows = pa.array(range(100))
    first, second = ad.column(rows), ad.column(pa.chunked_array([rows.slice(0, 60), rows.slice(60)]))
    items = [(col.type, chunk, _chunked.chunk_null_count(col, i), _chunked.read(col), group)
             for group, col in enumerate([first, second]) for i, chunk in enumerate(_chunked.chunks(col))]
    copied = transfer.copy_chunks(items, ad.Device.cpu(), ad.Device.cpu())
    data = [layout.Node.of(held).buffers[1] for held in copied]
    assert data[2] - data[1] == -(-60 * 8 // transfer.BLOCK_ALIGNMENT) * transfer.BLOCK_ALIGNMENT  # one block
    assert not (data[0] <= data[1] < data[0] + 800)  # the first column's block is its own
    assert [pa.array(ad.ArrowColumn(first.type, [held])).to_pylist() for held in copied] == [
        list(range(100)), list(range(60)), list(range(60, 100))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_copy_remembers_the_offsets_that_planning_it_reads(name):
    """The first and last offsets a copy writes are remembered (layout.remember) as long as the copy lives:
    each equals the memory's bytes, and planning the copy (what sending or copying it on does) through a
    device-style batch reader reads nothing, for every type, whole and sliced."""
    for source in (CASES[name], CASES[name].slice(3, 11)):
        copy = _compact(ad.column(source))
        offsets = [(b.address, b.size) for b in copy.buffers if b.role == "offsets" and b.address]
        remembered = [(key, entry[1]) for key, entry in list(layout._remembered.items())
                      if entry[0]() is not None and any(a <= key[0] < a + n for a, n in offsets)]
        assert len(remembered) >= min(len(offsets), 1) * 2 or name in WHOLE_EXTENT
        for (address, nbytes), data in remembered:
            assert layout.read_cpu(address, nbytes) == data  # what was remembered is what is there
        reads = _CountingBatches()
        again = _compact(copy, reads)
        assert again.to_pyarrow().equals(copy.to_pyarrow())
        if name not in WHOLE_EXTENT:
            assert reads.batches == 0, name  # every value planning needed was remembered


def test_remembered_values_go_with_the_copy():
    import gc

    copy = _compact(ad.column(pa.array(["ab", "c", None, "def"]).slice(1)))
    offsets = next(b for b in copy.buffers if b.role == "offsets")
    assert layout._recalled(offsets.address, 4) == bytes(4)
    # the slice keeps its row's bit position (offset 1): its offsets copied from row 0, 6 at row 1 + 3
    assert layout._recalled(offsets.address + 4 * 4, 4) == (6).to_bytes(4, "little")
    del copy
    gc.collect()
    assert layout._recalled(offsets.address, 4) is None and (offsets.address, 4) not in layout._remembered


def _merged(chunked: pa.ChunkedArray) -> ad.ArrowColumn | None:
    """The column's chunks copied into one by the merging copy (host to host, as a GPU copy plans it)."""
    col = ad.column(chunked)
    held = _chunked.chunks(col)
    dtype = _chunked.dtype(col)
    if not transfer.mergeable(dtype, [layout.Node.of(h) for h in held]):
        return None
    nulls = [_chunked.chunk_null_count(col, i) for i in range(len(held))]
    (merged,) = transfer.copy_chunks([], ad.Device.cpu(), ad.Device.cpu(), merges=[(dtype, held, nulls, layout.read_cpu,
                                                                                     0)])
    assert len(merged) == 1
    return _chunked.derive(col, merged, [sum(nulls)])


def _pieces(values: list, sizes: list[int], dtype: pa.DataType) -> pa.ChunkedArray:
    arr = pa.array(values, dtype)
    out, at = [], 0
    for n in sizes:
        out.append(arr.slice(at, n))
        at += n
    return pa.chunked_array(out, dtype)


MERGE_CASES = {
    "int64 with nulls in some chunks": ([None if i % 7 == 3 and i < 40 else i for i in range(100)], pa.int64()),
    "float32 without nulls": ([i / 3 for i in range(100)], pa.float32()),
    "bools": ([None if i % 11 == 0 else i % 3 == 0 for i in range(100)], pa.bool_()),
    "strings": ([None if i % 5 == 0 else "x" * (i % 9) + str(i) for i in range(100)], pa.string()),
    "strings, nulls in the last chunk only": ([None if i > 90 else "ab" * (i % 4) for i in range(100)], pa.string()),
    "large strings": (["é" * (i % 6) for i in range(100)], pa.large_string()),
    "binary": ([bytes([i % 256]) * (i % 5) for i in range(100)], pa.binary()),
}


@pytest.mark.parametrize("name", sorted(MERGE_CASES))
@pytest.mark.parametrize("sizes", [[8, 16, 40, 36], [24, 0, 64, 8, 4], [96, 4]])
def test_a_merging_copy_equals_pyarrows_combined_chunks(name, sizes):
    values, dtype = MERGE_CASES[name]
    chunked = _pieces(values, sizes, dtype)
    got = _merged(chunked)
    assert got is not None
    assert len(got.chunks) == 1
    want = chunked.combine_chunks()
    assert got.to_pyarrow().equals(pa.chunked_array([want]))
    assert got.null_count == want.null_count
    got.to_pyarrow().validate(full=True)


def test_chunks_cut_off_a_byte_or_of_nested_types_are_not_merged():
    assert _merged(_pieces(list(range(20)), [5, 15], pa.int64())) is not None  # no bitmap: any cut works
    assert _merged(_pieces([None, *range(19)], [5, 15], pa.int64())) is None  # bitmap cut inside a byte
    assert _merged(_pieces([True] * 20, [4, 16], pa.bool_())) is None
    assert _merged(pa.chunked_array([[[1], [2]], [[3]]])) is None  # lists keep their chunks
    assert _merged(pa.chunked_array([pa.array(["a"]).dictionary_encode()] * 2)) is None


def test_automatic_rechunking_picks_only_many_small_chunks_copied_from_the_host():
    from arrowdev.cuda import merges_on_copy

    gpu = ad.Device("cuda", 0)
    many = ad.column(_pieces(list(range(160)), [16] * 10, pa.int64()))
    few = ad.column(_pieces(list(range(160)), [80, 80], pa.int64()))
    assert merges_on_copy(many, gpu, None) and not merges_on_copy(many, gpu, False)
    assert not merges_on_copy(few, gpu, None) and merges_on_copy(few, gpu, True)
    assert not merges_on_copy(many, ad.Device("cuda_host", 0), True)
    large = ad.column(pa.chunked_array([pa.array(range(transfer.MERGE_MEAN_ROWS_BELOW), pa.int32())] * 10))
    assert not merges_on_copy(large, gpu, None) and merges_on_copy(large, gpu, True)


@pytest.mark.parametrize("dtype", [pa.int32(), pa.string(), pa.bool_()])
def test_a_merging_copy_gives_chunks_without_a_bitmap_all_valid_rows(dtype):
    sample = {"int32": [1, 2], "string": ["a", "bc"], "bool": [True, False]}[str(dtype).replace("large_", "")]
    plain = pa.array(sample * 8, dtype)  # no bitmap at all
    with_nulls = pa.array([None, *sample * 7, sample[0]], dtype)
    assert plain.buffers()[0] is None and with_nulls.buffers()[0] is not None
    chunked = pa.chunked_array([plain, with_nulls, plain], dtype)
    got = _merged(chunked)
    assert got is not None and got.null_count == 1
    assert got.to_pyarrow().equals(pa.chunked_array([chunked.combine_chunks()]))


_MERGE_TYPES = {"int16": pa.int16(), "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
                "large_binary": pa.large_binary()}


def _value(kind: str, i: int) -> object:
    return {"int16": i % 300 - 150, "float64": i / 7, "bool": i % 3 == 0, "string": "ü" * (i % 4) + str(i),
            "large_binary": bytes(range(i % 9))}[kind]


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(_MERGE_TYPES)), eights=st.lists(st.integers(0, 6), min_size=2, max_size=9),
       last=st.integers(0, 13), null_rate=st.sampled_from([0.0, 0.2, 1.0]), seed=st.integers(0, 10**6),
       bitmapless=st.lists(st.booleans(), min_size=10, max_size=10))
def test_property_a_merging_copy_equals_combine_chunks(kind, eights, last, null_rate, seed, bitmapless):
    """Chunks of random multiples of 8 rows (and any last one), with and without nulls, some without a bitmap at
    all: the merged copy equals PyArrow's combined chunks, nulls and values."""
    import random

    rng = random.Random(seed)
    sizes = [8 * k for k in eights] + [last]
    chunks, at = [], 0
    for size, plain in zip(sizes, bitmapless):
        values = [None if not plain and rng.random() < null_rate else _value(kind, at + i) for i in range(size)]
        chunks.append(pa.array(values, _MERGE_TYPES[kind]))
        at += size
    chunked = pa.chunked_array(chunks, _MERGE_TYPES[kind])
    got = _merged(chunked)
    if not len(chunked):  # no rows: nothing to merge, the chunks are copied as they are
        assert got is None
        return
    assert got is not None
    assert got.to_pyarrow().equals(pa.chunked_array([chunked.combine_chunks()]))
    assert got.null_count == chunked.null_count
