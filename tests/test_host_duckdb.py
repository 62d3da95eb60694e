"""arrowdev UDFs as DuckDB functions (arrowdev/integrations/duckdb.py), for real: vectors of 2048 rows, NULLs,
the parameter and return types, errors; results against the same function run row by row in Python."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowdev as ad
import arrowdev.duckdb
from support.host_udfs import or_minus_one, piecewise, shout, weighted
from support.samples import reference

duckdb = pytest.importorskip("duckdb")  # the GPU machine may lack it; CI has it (the test extra)


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def _duck(con, sql: str) -> list:
    return [row[0] for row in con.sql(sql).fetchall()]


def test_duckdb_function_over_many_vectors_with_nulls(con):
    ad.duckdb.register(con, "piecewise", piecewise, ["DOUBLE"])
    con.sql("CREATE TABLE t AS SELECT CASE WHEN range % 9 = 4 THEN NULL ELSE (range % 100) / 100 END::DOUBLE x "
            "FROM range(10000)")  # five vectors of 2048 rows, the last one short
    xs = _duck(con, "SELECT x FROM t")
    assert _duck(con, "SELECT piecewise(x) FROM t") == reference(piecewise, xs)
    [(total, native)] = con.sql("SELECT sum(piecewise(x)), sum(CASE WHEN x > 0.5 THEN x * 2 + 1 ELSE x - 1 END) "
                                "FROM t").fetchall()
    assert total == pytest.approx(native)


def test_duckdb_string_function_over_many_vectors_with_nulls(con):
    ad.duckdb.register(con, "shout", shout, ["VARCHAR"])
    con.sql("CREATE TABLE t AS SELECT CASE WHEN range % 7 = 2 THEN NULL ELSE repeat('é', range % 5) || range::VARCHAR "
            "END s FROM range(10000)")  # five vectors of 2048 rows, the last one short
    assert _duck(con, "SELECT shout(s) FROM t") == _duck(con, "SELECT upper(s) || '!' FROM t")


def test_duckdb_types_from_annotations_python_and_arrow_types(con):
    def scaled(x: float, n: int):
        return x * n

    ad.duckdb.register(con, "scaled", scaled)
    ad.duckdb.register(con, "weighted", weighted, [pa.float64(), int])
    ad.duckdb.register(con, "narrow", lambda b: b + 1, ["INTEGER"], "SMALLINT")
    assert con.sql("SELECT scaled(1.5, 4), typeof(scaled(1.5, 4))").fetchall() == [(6.0, "DOUBLE")]
    assert _duck(con, "SELECT weighted(a, b) FROM (VALUES (2.0, 3), (-1.0, 5), (NULL, 1)) v(a, b)") == [6.0, 5.0, None]
    assert con.sql("SELECT narrow(41), typeof(narrow(41))").fetchall() == [(42, "SMALLINT")]


def test_duckdb_strings_and_null_aware(con):
    ad.duckdb.register(con, "shout", shout, ["VARCHAR"])
    ad.duckdb.register(con, "or_minus_one", or_minus_one, ["DOUBLE"], null_aware=True)
    assert _duck(con, "SELECT shout(s) FROM (VALUES ('ab'), (NULL), ('été')) v(s)") == ["AB!", None, "ÉTÉ!"]
    assert con.sql("SELECT typeof(shout('a'))").fetchall() == [("VARCHAR",)]
    assert _duck(con, "SELECT or_minus_one(x) FROM (VALUES (NULL), (2.5)) v(x)") == [-1.0, 2.5]


def test_duckdb_errors_name_the_argument_and_its_type(con):
    with pytest.raises(TypeError, match=r"DuckDB passes argument 'x' of type DECIMAL\(10,2\) \(Arrow decimal128"):
        ad.duckdb.register(con, "bad", piecewise, ["DECIMAL(10,2)"])
    with pytest.raises(ad.UDFCompileError, match=r"\(DuckDB passed 's': DOUBLE\)"):
        ad.duckdb.register(con, "bad", shout, ["DOUBLE"])
    with pytest.raises(TypeError, match=r"expected parameters=\[...\].*annotations.*\['x'\]"):
        ad.duckdb.register(con, "bad", piecewise)
    with pytest.raises(TypeError, match="takes 2 argument"):
        ad.duckdb.register(con, "bad", weighted, ["DOUBLE"])
    with pytest.raises(TypeError, match="expected a DuckDB type name, got 'NOT_A_TYPE'"):
        ad.duckdb.register(con, "bad", piecewise, ["NOT_A_TYPE"])


@pytest.mark.gpu
def test_duckdb_on_the_gpu_matches_the_cpu(con):
    ad.duckdb.register(con, "cpu_piecewise", piecewise, ["DOUBLE"])
    ad.duckdb.register(con, "gpu_piecewise", piecewise, ["DOUBLE"], device="cuda")
    con.sql("CREATE TABLE t AS SELECT (range % 100) / 100 x FROM range(5000)")
    assert _duck(con, "SELECT gpu_piecewise(x) FROM t") == _duck(con, "SELECT cpu_piecewise(x) FROM t")


@pytest.mark.parametrize("name, f, arrays", [
    ("sliced nullable", piecewise, [pa.array([0.25, None, 2.0, 0.75] * 40)[3:150]]),
    ("two nullable", weighted, [pa.array([1.0, None, -2.0, 4.0] * 40), pa.array([3, 4, None, 6] * 40)]),
    ("bool out, misaligned", lambda x: x > 0.5, [pa.array([0.25, None, 2.0] * 50)[5:]]),
    ("strings in", lambda s: len(s), [pa.array(["ab", None, "été", ""] * 30)]),
    ("bools in", lambda b: 1 if b else 0, [pa.array([True, None, False] * 30)]),
    ("strings out", shout, [pa.array(["ab", "été", "", "x" * 30] * 30)]),
    ("strings out, nullable and sliced", shout, [pa.array(["ab", None, "été", ""] * 30)[3:]]),
    ("strings out of two", lambda s, t: s + t, [pa.array(["ab", None, "é"] * 30), pa.array(["x", "yz", None] * 30)]),
])
def test_duckdb_batches_from_buffers_agree_with_the_general_path(name, f, arrays):
    """The prepared path from PyArrow buffers (HostUDF.pyarrow_call, what DuckDB's vectors take after the first)
    gives what the general path gives: values, validity, null count, type."""
    from arrowdev.integrations.batches import HostUDF

    udf = HostUDF(f, host="DuckDB", noun="argument")
    assert udf.pyarrow_call(arrays) is None  # no prepared call before the first
    general = pa.array(udf(arrays, [f"a{k}" for k in range(len(arrays))]))
    fast = udf.pyarrow_call(arrays)
    assert fast is not None and fast.type == general.type and fast.null_count == general.null_count
    assert fast.equals(general) and fast.to_pylist() == reference(f, *[a.to_pylist() for a in arrays])


def test_a_host_that_does_not_import_names_the_extra(con, monkeypatch):
    """The engine is taken from the modules imported already (an inline expression asks each query), and one that
    is not there still says which extra to install."""
    import sys

    from arrowdev.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb raises ImportError
    with pytest.raises(MissingDependencyError, match=r"arrowdev\.duckdb needs duckdb.*pip install"):
        ad.duckdb.register(con, "f", piecewise, ["DOUBLE"])
