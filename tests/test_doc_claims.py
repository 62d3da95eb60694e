"""What the docs say a call does (returns, raises, refuses), run. Two kinds:

- the consumer table of docs/protocols.md: every cell that names an exception is read off the page and the
  consumer is run on that kind of object, which must raise exactly that exception;
- a table of claims below: each quotes the document's words (which must still be on the page) and checks them.

A claim that stops being true, or a page that changes its words, fails here naming the page.
"""

from __future__ import annotations

import pathlib
import re

import nanoarrow as na
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHUNKS = pa.chunked_array([[1, 2], [3]])


def _objects() -> dict[str, object]:
    """The consumer table's columns, in order."""
    return {
        "column, several chunks": ad.column(CHUNKS),
        "column, one chunk": ad.column(pa.array([1, 2, 3])),
        "table, several batches": ad.table(pa.Table.from_batches([pa.record_batch({"a": [1]}),
                                                                  pa.record_batch({"a": [2]})])),
        "table, one batch": ad.table(pa.record_batch({"a": [1, 2]})),
    }


CONSUMERS = {"`pa.array`": pa.array, "`pa.chunked_array`": pa.chunked_array, "`pa.table`": pa.table,
             "`pa.record_batch`": pa.record_batch, "`pl.Series`, `pl.from_arrow`": pl.Series,
             "`pl.DataFrame`": pl.DataFrame, "`nanoarrow.Array`": na.Array, "`nanoarrow.c_array`": na.c_array}


def _consumer_table_errors() -> list[tuple[str, str, str]]:
    """(consumer, object, exception name) for every cell of the consumer table that names an exception."""
    text = (ROOT / "docs" / "protocols.md").read_text()
    header = "| consumer | column, several chunks | column, one chunk | table, several batches | table, one batch |"
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    columns = header.strip("|").split("|")[1:]
    found = []
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        for column, cell in zip(columns, cells[1:]):
            named = re.match(r"`(\w+(?:Error|Invalid|Exception))`", cell)
            if named:
                found.append((cells[0], column.strip(), named.group(1)))
    return found


CONSUMER_ERRORS = _consumer_table_errors()


def test_the_consumer_table_names_errors_to_check():
    assert len(CONSUMER_ERRORS) >= 5 and {c for c, _, _ in CONSUMER_ERRORS} <= set(CONSUMERS)


@pytest.mark.parametrize("consumer,obj,error", CONSUMER_ERRORS, ids=lambda v: str(v))
def test_each_error_of_the_consumer_table_is_the_one_raised(consumer, obj, error):
    with pytest.raises(Exception) as raised:
        CONSUMERS[consumer](_objects()[obj])
    assert type(raised.value).__name__ == error, f"{consumer}({obj}) raised {type(raised.value).__name__}"


def _polars_null_series_round_trips():
    series = pl.Series("n", [None, None, None])
    col = ad.column(series)
    assert col.type == pa.null() and col.null_count == 3 and pl.Series(col).dtype == pl.Null


def _raises(error, call):
    def check():
        with pytest.raises(error):
            call()
    return check


def _bare_device_capsule_needs_schema():
    _, array = pa.array([1, 2]).__arrow_c_device_array__()
    with pytest.raises(TypeError, match="schema="):
        ad.column(array)


def _months_to_pyarrow_raises_not_implemented():
    col = ad.column(na.c_array([1, 2], na.interval_months()))
    with pytest.raises(NotImplementedError, match="to_pylist"):
        col.to_pyarrow()
    with pytest.raises(KeyError):  # PyArrow's own import of the type's arrays
        pa.array(na.c_array([1, 2], na.interval_months()))


def _polars_request_ignored_then_cast():
    assert ad.column(pl.Series([1, 2]), schema=pa.float64()).type == pa.float64()
    with pytest.raises(NotImplementedError):  # nanoarrow 0.9 refuses any requested schema
        na.Array([1, 2], na.int64()).__arrow_c_stream__(pa.float64().__arrow_c_schema__())


# (document, words on the page, check)
CLAIMS = [
    ("docs/types.md", "yes (a Polars null Series too", _polars_null_series_round_trips),
    ("docs/protocols.md", "7. anything else: `TypeError`.", _raises(TypeError, lambda: ad.column(object()))),
    ("docs/protocols.md", "`arrow_device_array`, which needs `schema=` for its type (`TypeError` without)",
     _bare_device_capsule_needs_schema),
    ("docs/types.md", "`to_pyarrow()` of such a column raises\n`NotImplementedError` naming what works instead",
     _months_to_pyarrow_raises_not_implemented),
    ("docs/protocols.md", "nanoarrow 0.9 (which raises\n`NotImplementedError` for any request", _polars_request_ignored_then_cast),
    ("docs/protocols.md", "`ad.column(pl.Series([1, 2]), schema=pa.float64())` is float64",
     lambda: ad.column(pl.Series([1, 2]), schema=pa.float64()).type == pa.float64() or pytest.fail("not float64")),
    ("docs/protocols.md", "`tbl == pl.DataFrame(tbl)` is True",
     lambda: ad.table({"s": ["a", None]}) == pl.DataFrame({"s": ["a", None]}) or pytest.fail("not equal")),
    ("docs/protocols.md", "`pa.array([\"a\"]) == pa.array([\"a\"], pa.large_string())` is False",
     lambda: not pa.array(["a"]) == pa.array(["a"], pa.large_string()) or pytest.fail("PyArrow said True")),
    ("docs/protocols.md", "a negative index in a sequence is an `IndexError`",
     _raises(IndexError, lambda: ad.column(CHUNKS)[[-1]])),
    ("docs/protocols.md", "`ad.table({1: [1]})` raises `TypeError`", _raises(TypeError, lambda: ad.table({1: [1]}))),
    ("docs/protocols.md", "looking up a repeated name raises `KeyError`",
     _raises(KeyError, lambda: ad.table({"n": [1]}).append_column("n", [2])["n"])),
    ("docs/protocols.md", "the attributes raise `AttributeError` saying to call `combine_chunks()`",
     _raises(AttributeError, lambda: ad.column(CHUNKS).__arrow_c_array__)),
    ("docs/udf.md", "| anything else (nested, dictionary, decimal128/256, binary) | a `TypeError` naming the type |",
     _raises(TypeError, lambda: ad.column(pa.array([[1]])).apply(lambda x: x))),
]


@pytest.mark.parametrize("document,words,check", CLAIMS, ids=[f"{d}: {w[:40]}" for d, w, _ in CLAIMS])
def test_a_claim_of_the_docs_holds(document, words, check):
    assert words in (ROOT / document).read_text(), f"{document} no longer says {words!r}: update this claim"
    check()
