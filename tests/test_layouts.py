"""The one table of layouts (arrowdev/core/layout.py ``LAYOUTS``) against the native core: for every storage type
of every sample (tests/support/samples.py), the table's kind is the ``LayoutKind`` the C core parses the format
as (capsules/format.h), offsets widths agree with its bits, and a node of that type has the buffers the table's
rules give it. Adding an Arrow type without its row here fails."""

from __future__ import annotations

import pathlib
import re

import nanoarrow as na
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev import _capsules
from arrowdev.core import chunks, layout
from support.samples import CASES

ROOT = pathlib.Path(__file__).resolve().parent.parent


def native_kinds() -> list[str]:
    """The LayoutKind names in their order, from capsules/format.h: kLayoutFixedList -> fixed_list."""
    enum = re.search(r"typedef enum LayoutKind \{(.*?)\} LayoutKind;", (ROOT / "capsules" / "format.h").read_text(), re.S)
    names = re.findall(r"kLayout(\w+),", enum.group(1))
    return [re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower() for n in names]


def _every_type(dtype: ad.DataType) -> list[ad.DataType]:
    found = [dtype]
    for child in dtype.children:
        found += _every_type(child)
    if dtype.value_type is not None:
        found += _every_type(dtype.value_type)
    return found


def sample_types() -> dict[str, ad.DataType]:
    """One type of each storage id among the samples, and the interval types PyArrow cannot build."""
    found: dict[str, ad.DataType] = {}
    for array in CASES.values():
        for t in _every_type(ad.column(array).type):
            found.setdefault(t.storage_id, t)
    for t in (na.interval_months(), na.interval_day_time()):
        found.setdefault(ad.DataType.from_arrow(t).storage_id, ad.DataType.from_arrow(t))
    return found


def test_the_native_kinds_are_read():
    kinds = native_kinds()
    assert kinds[:3] == ["null", "fixed", "bytes"] and "fixed_list" in kinds and "run_end" in kinds


@pytest.mark.parametrize("storage", sorted(sample_types()))
def test_the_table_agrees_with_the_native_core(storage):
    dtype = sample_types()[storage]
    assert storage in layout.LAYOUTS, f"{storage}: add its row to arrowdev/core/layout.py LAYOUTS"
    row = layout.LAYOUTS[storage]
    fmt = dtype.c_schema.format  # a dictionary's: its indices'
    kind, bits, _, _ = _capsules.format_layout(fmt)
    assert row.kind == native_kinds()[kind], (storage, fmt)
    if row.kind in ("bytes", "list", "list_view"):
        assert row.offsets * 8 == bits
    assert row.validity == (row.kind not in ("null", "sparse", "dense", "run_end"))


def test_every_row_is_a_kind_of_the_native_core_and_a_known_cut():
    kinds = set(native_kinds())
    for storage, row in layout.LAYOUTS.items():
        assert row.kind in kinds, storage
        assert row.cut in ("rows", "from_first_row", "whole"), storage
        assert row.child_rows in ("offsets", "fixed", "same", "all", "none"), storage
    assert set(layout.LAYOUTS) >= set(sample_types())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_buffer_rules_give_each_node_the_buffers_it_holds(name):
    col = ad.column(CASES[name])
    for held in chunks.chunks(col):
        node = layout.Node.of(held)
        specs = layout.buffer_specs(col.type, node.offset, node.length, node.buffers, layout.read_cpu)
        assert len(specs) == len(node.buffers), name


def test_pyarrow_stand_ins_come_from_the_table():
    from arrowdev.interop import pyarrow as interop

    assert interop._STAND_INS == {"tiM": "i", "tiD": "w:8"}
    assert pa.types.is_int32(interop.stand_in(ad.DataType.from_arrow(na.interval_months())).to_pyarrow())


class _CountingReader:
    """A reader of CPU memory that can also count a bitmap's set bits where it is (as the GPU reader does)."""

    def __init__(self) -> None:
        self.counted: list[tuple[int, int]] = []

    def __call__(self, address: int, nbytes: int) -> bytes:
        return layout.read_cpu(address, nbytes)

    def count_set_bits(self, address: int, bit_offset: int, length: int) -> int:
        self.counted.append((bit_offset, length))
        first, last = bit_offset // 8, (bit_offset + length + 7) // 8
        return layout.count_set_bits(layout.read_cpu(address + first, last - first), bit_offset % 8, length)


@pytest.mark.parametrize("offset", [0, 3, 8, 13])
@pytest.mark.parametrize("length", [10, 32_000, 40_077])
def test_bitmaps_are_counted_where_they_are_when_the_reader_can(offset, length):
    import numpy as np

    rng = np.random.default_rng(offset * 1000 + length)
    values = [None if x else 1 for x in rng.random(offset + length + 5) < 0.3]
    arr = pa.array(values, pa.int64())
    validity = arr.buffers()[0].address
    reader = _CountingReader()
    got = layout.null_count(ad.DataType.from_arrow(pa.int64()), offset, length, validity, reader)
    assert got == arr.slice(offset, length).null_count
    assert reader.counted == [(offset, length)]  # the reader counted it; nothing was copied to count
    assert layout.null_count(ad.DataType.from_arrow(pa.int64()), offset, length, validity, layout.read_cpu) == got


@pytest.mark.parametrize("offset, length", [(0, 10), (5, 33_001), (8, 40_000)])
def test_a_cpu_columns_reader_counts_set_bits_in_place(offset, length):
    import numpy as np

    values = [None if x else 1 for x in np.random.default_rng(length).random(offset + length) < 0.4]
    arr = pa.array(values, pa.int64())
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")
    reader = chunks.read(ad.column(arr))
    assert reader.count_set_bits(arr.buffers()[0].address, offset, length) == int(bits[offset:offset + length].sum())
