"""``schema=`` on import (``ad.column(obj, schema=)``, ``ad.table(obj, schema=)``) is applied whatever the
producer: asked of the producer as the requested schema; what a producer hands back unchanged (Polars,
nanoarrow, a mapping of lists) is cast by PyArrow on the CPU, as ``pa.chunked_array(obj, type=)`` and
``pa.table(obj, schema=)`` cast it; what cannot be cast, and data on a GPU, is refused with a ValueError."""

from __future__ import annotations

import nanoarrow as na
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad

SCHEMA = pa.schema([("a", pa.float64()), ("s", pa.large_string())])
TABLES = {
    "pyarrow": lambda: pa.table({"a": [1, 2], "s": ["x", None]}),
    "polars": lambda: pl.DataFrame({"a": [1, 2], "s": ["x", None]}),
    "nanoarrow": lambda: na.Array(pa.record_batch({"a": [1, 2], "s": ["x", None]})),
    "mapping": lambda: {"a": [1, 2], "s": ["x", None]},
    "arrowdev": lambda: ad.table({"a": [1, 2], "s": ["x", None]}),
}
COLUMNS = {
    "pyarrow": lambda: pa.array([1, 2]),
    "polars": lambda: pl.Series([1, 2]),
    "nanoarrow c_array": lambda: na.c_array([1, 2], na.int64()),
    "nanoarrow Array": lambda: na.Array([1, 2], na.int64()),
    "list": lambda: [1, 2],
}


@pytest.mark.parametrize("producer", list(TABLES))
def test_a_table_schema_is_applied_for_every_producer(producer):
    tbl = ad.table(TABLES[producer](), schema=SCHEMA)
    assert tbl.schema == pa.struct(SCHEMA) and pa.table(tbl).schema == SCHEMA
    assert tbl.to_pydict() == {"a": [1.0, 2.0], "s": ["x", None]}
    if producer in ("pyarrow", "polars"):  # PyArrow casts what the producer gives as arrowdev does (nanoarrow's
        # NotImplementedError for a requested schema stops pa.table; arrowdev asks again without it)
        assert pa.table(TABLES[producer](), schema=SCHEMA).equals(pa.table(tbl))


@pytest.mark.parametrize("producer", list(COLUMNS))
def test_a_column_type_is_applied_for_every_producer(producer):
    col = ad.column(COLUMNS[producer](), schema=pa.float64())
    assert col.type == pa.float64() and col.to_pylist() == [1.0, 2.0]


def test_a_schema_that_cannot_apply_is_refused_with_the_reason():
    frame = pl.DataFrame({"a": ["x"]})
    with pytest.raises(ValueError, match=r"schema= names the columns \['b'\], the producer gave \['a'\]"):
        ad.table(frame, schema=pa.schema([("b", pa.string())]))
    with pytest.raises(ValueError, match="schema= asks for int64, the producer gave string_view, and PyArrow cannot "
                                         "cast column 'a' to it"):
        ad.table(frame, schema=pa.schema([("a", pa.int64())]))
    with pytest.raises(TypeError, match="expected a schema"):
        ad.table(frame, schema=pa.int64())


@pytest.mark.gpu
def test_a_schema_is_not_cast_on_a_gpu():
    gpu = ad.column(pa.array([1, 2])).to_device()
    with pytest.raises(ValueError, match="where arrowdev does not cast"):
        ad.column(gpu, schema=pa.float64())
