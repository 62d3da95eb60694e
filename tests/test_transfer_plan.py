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


def _compact(col: ad.ArrowColumn) -> ad.ArrowColumn:
    items = [(col.type, chunk, _chunked.chunk_null_count(col, i), _chunked.read(col))
             for i, chunk in enumerate(_chunked.chunks(col))]
    chunks = transfer.copy_chunks(items, ad.Device.cpu(), ad.Device.cpu())
    return ad.ArrowColumn(col.type, chunks)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_planned_copy_equals_the_source(name, layout, balanced):
    source = source_of(name, layout)
    col = ad.column(source)
    copy = _compact(col)
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
