"""The copy planner of arrowdev.cuda.transfer, run host-to-host so it is checked without a GPU:
every type, whole and sliced, copies equal values, and a slice copies only its own bytes."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev import _chunked, layout
from arrowdev.cuda import transfer
from support.samples import CASES, LAYOUTS, source_of

# Layouts whose children are referenced out of order keep their offset and copy from the start.
WHOLE_EXTENT = {"null", "run_end_encoded", "dense_union", "list_view", "large_list_view", "string_view",
                "binary_view"}


def _compact(col: ad.ArrowColumn, read: layout.Reader | None = None) -> ad.ArrowColumn:
    read = read or _chunked.read(col)
    items = [(col.type, chunk, _chunked.chunk_null_count(col, i), read) for i, chunk in enumerate(_chunked.chunks(col))]
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
