"""arrowdev UDFs where users already are: Polars, DuckDB and pandas, each against its own row-by-row UDF and its
native expression, same data, one process; and the fixed cost of one CPU call on a small batch.

    python3 benchmarks/bench_hosts.py [--rows 10000 100000 1000000 10000000] [--runs 3] [--gpu] [--json]

UDFs (each with the host's native expression for the same thing):

- ``piecewise``: ``x * 2 + 1 if x > 0.5 else x - 1`` (Polars ``when/then/otherwise``, SQL ``CASE``, NumPy ``where``);
- ``two columns``: ``x * y if x > 0.5 else y``;
- ``heavy``: ``sqrt(x * x + 1) * sin(x) + log1p(x)`` (math functions: where a GPU has the most to give);
- ``upper!``: ``s.upper() + "!"``; ``concat``: ``s + "!"``; ``replace``: ``s.replace("a", "b")``.

Per host and size: the host's row-by-row UDF (Polars ``map_elements``, DuckDB ``create_function`` with
``type="native"``, pandas ``Series.map``; skipped past ``--row-by-row-max`` rows, they take seconds), arrowdev
(``ad.polars.udf``, ``ad.duckdb.register``, ``ad.pandas.apply``; with ``--gpu`` also ``device="cuda"``), the
native expression, and for DuckDB an identity Arrow function of the UDF's arguments (``type="arrow"``, returning its
first input: DuckDB's own floor for a vectorized Python function of that many arguments) and the vectorized Arrow
function a DuckDB user writes by hand: for the numeric UDFs ``numpy_arrow`` (the NumPy expression over each vector),
for the string UDFs ``pyarrow_arrow`` (PyArrow's compute functions over each vector: what the same work costs
through DuckDB's Arrow functions without arrowdev). Times are the best of ``--runs`` after a warm-up call (which compiles);
DuckDB queries consume the result with ``sum`` (numbers) or ``sum(length(...))`` (strings), Polars and pandas
materialize the new column. Every arrowdev result is checked against the native expression's first.

It prints, per UDF and size, the times in ms and the ratios the goals are about: row-by-row / arrowdev (goal >= 50x
for numeric UDFs at 10^6 rows), arrowdev / native (goal <= 1.5 where an expression exists), and for DuckDB
arrowdev / identity (goal <= 1.5). Then the fixed cost: microseconds per ``col.apply(f)`` on 2048 rows (DuckDB's
vector) against NumPy's ``x * 2 + 1`` on the same array (goal: under 10 us). The machine's load average is
recorded with the results: on a shared machine the numbers move with it.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import arrowdev as ad
import record

WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "iota", "kappa"]


def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def two_columns(x, y):
    return x * y if x > 0.5 else y


def heavy(x):
    return math.sqrt(x * x + 1.0) * math.sin(x) + math.log1p(x)


def upper_bang(s):
    return s.upper() + "!"


def concat(s):
    return s + "!"


def replace(s):
    return s.replace("a", "b")


NUMERIC = ("piecewise", "two columns", "heavy")
# the numeric UDFs as NumPy expressions: pandas' native peer, and the vectorized Arrow UDF a DuckDB user writes
# by hand (a function of whole vectors, the same per-vector Python call as arrowdev's)
NUMPY: dict[str, Callable[..., Any]] = {
    "piecewise": lambda x: np.where(x > 0.5, x * 2 + 1, x - 1), "two columns": lambda x, y: np.where(x > 0.5, x * y, y),
    "heavy": lambda x: np.sqrt(x * x + 1) * np.sin(x) + np.log1p(x)}
# the string UDFs as PyArrow compute functions: the vectorized Arrow UDF a DuckDB user writes by hand for strings
# (PyArrow's utf8_upper maps case as Unicode's simple mapping, Python's str.upper as the full one: the two agree on
# the benchmark's words, which have no character whose upper case is longer)
PYARROW: dict[str, Callable[[Any], Any]] = {
    "upper!": lambda s: pc.binary_join_element_wise(pc.utf8_upper(s), "!", ""),
    "concat": lambda s: pc.binary_join_element_wise(s, "!", ""),
    "replace": lambda s: pc.replace_substring(s, "a", "b")}
UDFS: dict[str, tuple[Callable[..., Any], list[str]]] = {
    "piecewise": (piecewise, ["x"]), "two columns": (two_columns, ["x", "y"]), "heavy": (heavy, ["x"]),
    "upper!": (upper_bang, ["s"]), "concat": (concat, ["s"]), "replace": (replace, ["s"]),
}


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    x, y = rng.random(rows), rng.random(rows)
    picks = rng.integers(0, len(WORDS), size=min(rows, 10_000))
    base = [f"{WORDS[p]}{i % 100}" for i, p in enumerate(picks)]  # about 7 bytes, some non-ASCII
    s = pa.array(base * (rows // len(base) + 1))[:rows]
    return pa.table({"x": x, "y": y, "s": s})


def best(fn: Callable[[], Any], runs: int) -> float:
    """Milliseconds: the best of ``runs`` calls after a warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


# ---- Polars ------------------------------------------------------------------------------------------------

def polars_cases(table: pa.Table, udf: str, gpu: bool) -> dict[str, Callable[[], Any]]:
    import polars as pl

    import arrowdev.polars  # noqa: F401

    # map_elements is the row-by-row peer here on purpose: Polars' advice to use its expressions is heeded below
    warnings.filterwarnings("ignore", category=pl.exceptions.PolarsInefficientMapWarning)
    df = pl.from_arrow(table)
    f, cols = UDFS[udf]
    x, y, s = pl.col("x"), pl.col("y"), pl.col("s")
    native = {"piecewise": pl.when(x > 0.5).then(x * 2 + 1).otherwise(x - 1),
              "two columns": pl.when(x > 0.5).then(x * y).otherwise(y),
              "heavy": (x * x + 1).sqrt() * x.sin() + x.log1p(),
              "upper!": s.str.to_uppercase() + "!", "concat": s + "!",
              "replace": s.str.replace_all("a", "b", literal=True)}[udf]
    if len(cols) == 1:
        row_by_row = pl.col(cols[0]).map_elements(f, return_dtype=df.schema[cols[0]] if udf not in NUMERIC else
                                                  pl.Float64)
    else:
        row_by_row = pl.struct(*cols).map_elements(lambda r: f(*r.values()), return_dtype=pl.Float64)
    cases = {"row_by_row": lambda: df.select(row_by_row), "arrowdev": lambda: df.select(ad.polars.udf(f, *cols)),
             "native": lambda: df.select(native)}
    if gpu:
        cases["arrowdev_gpu"] = lambda: df.select(ad.polars.udf(f, *cols, device="cuda"))
    return cases


def polars_check(cases: dict[str, Callable[[], Any]]) -> None:
    got, want = cases["arrowdev"]().to_series(), cases["native"]().to_series()
    _close(got.to_list(), want.to_list())


# ---- DuckDB ------------------------------------------------------------------------------------------------

_SQL = {"piecewise": "CASE WHEN x > 0.5 THEN x * 2 + 1 ELSE x - 1 END", "two columns": "CASE WHEN x > 0.5 THEN x * y ELSE y END",
        "heavy": "sqrt(x * x + 1) * sin(x) + ln(1 + x)", "upper!": "upper(s) || '!'", "concat": "s || '!'",
        "replace": "replace(s, 'a', 'b')"}


def duckdb_cases(table: pa.Table, udf: str, gpu: bool) -> dict[str, Callable[[], Any]]:
    import duckdb

    import arrowdev.duckdb  # noqa: F401

    con = duckdb.connect()
    con.register("source", table)
    con.sql("CREATE TABLE t AS SELECT * FROM source")
    f, cols = UDFS[udf]
    numeric = udf in NUMERIC
    types = ["DOUBLE" if c != "s" else "VARCHAR" for c in cols]
    returns = "DOUBLE" if numeric else "VARCHAR"
    con.create_function("row_by_row", f, types, returns, type="native")
    # the floor of a function of as many arguments (DuckDB makes an Arrow array of each argument per vector);
    # DuckDB counts the function's parameters: one function per arity
    identity = (lambda a: a) if len(cols) == 1 else (lambda a, b: a)
    con.create_function("identity", identity, types, types[0], type="arrow", null_handling="special")
    ad.duckdb.register(con, "arrowdev", f, types)
    args = ", ".join(cols)

    def query(expression: str) -> Callable[[], Any]:
        sql = f"SELECT sum({expression}) FROM t" if numeric else f"SELECT sum(length({expression})) FROM t"
        return lambda: con.sql(sql).fetchall()
    cases = {"row_by_row": query(f"row_by_row({args})"), "arrowdev": query(f"arrowdev({args})"),
             "native": query(_SQL[udf]), "identity": query(f"identity({args})")}
    if numeric:
        expression = NUMPY[udf]  # DuckDB counts the function's parameters: one function per arity
        numpy_arrow = ((lambda a: pa.array(expression(a.to_numpy()))) if len(cols) == 1 else
                       (lambda a, b: pa.array(expression(a.to_numpy(), b.to_numpy()))))
        con.create_function("numpy_arrow", numpy_arrow, types, returns, type="arrow", null_handling="special")
        cases["numpy_arrow"] = query(f"numpy_arrow({args})")
    else:
        con.create_function("pyarrow_arrow", PYARROW[udf], types, returns, type="arrow", null_handling="special")
        cases["pyarrow_arrow"] = query(f"pyarrow_arrow({args})")
    if gpu:
        ad.duckdb.register(con, "arrowdev_gpu", f, types, device="cuda")
        cases["arrowdev_gpu"] = query(f"arrowdev_gpu({args})")
    return cases


def duckdb_check(cases: dict[str, Callable[[], Any]]) -> None:
    [(got,)], [(want,)] = cases["arrowdev"](), cases["native"]()
    assert math.isclose(got, want, rel_tol=1e-9), (got, want)
    if "pyarrow_arrow" in cases:  # the peer does the same work
        [(peer,)] = cases["pyarrow_arrow"]()
        assert peer == want, (peer, want)


# ---- pandas ------------------------------------------------------------------------------------------------

def pandas_cases(table: pa.Table, udf: str, gpu: bool) -> dict[str, Callable[[], Any]]:
    import pandas as pd

    import arrowdev.pandas  # noqa: F401

    df = table.to_pandas()  # NumPy floats, pandas' str (Arrow-backed) strings: what read_parquet gives
    f, cols = UDFS[udf]
    x, y, s = df["x"], df["y"], df["s"]
    native: Callable[[], Any] = {
        "piecewise": lambda: pd.Series(NUMPY[udf](x), index=df.index),
        "two columns": lambda: pd.Series(NUMPY[udf](x, y), index=df.index),
        "heavy": lambda: pd.Series(NUMPY[udf](x), index=df.index),
        "upper!": lambda: s.str.upper() + "!", "concat": lambda: s + "!",
        "replace": lambda: s.str.replace("a", "b", regex=False)}[udf]
    if len(cols) == 1:
        def row_by_row() -> Any:
            return df[cols[0]].map(f)
    else:
        def row_by_row() -> Any:
            return pd.Series([f(a, b) for a, b in zip(df[cols[0]], df[cols[1]])], index=df.index)  # faster than apply(axis=1)
    data = df[cols[0]] if len(cols) == 1 else df
    options = {} if len(cols) == 1 else {"columns": cols}
    cases = {"row_by_row": row_by_row, "arrowdev": lambda: ad.pandas.apply(data, f, **options), "native": native}
    if gpu:
        cases["arrowdev_gpu"] = lambda: ad.pandas.apply(data, f, device="cuda", **options)
    return cases


def pandas_check(cases: dict[str, Callable[[], Any]]) -> None:
    _close(list(cases["arrowdev"]()), list(cases["native"]()))


def _close(got: list, want: list) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a == b or isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (a, b)


HOSTS = {"Polars": (polars_cases, polars_check, "polars"), "DuckDB": (duckdb_cases, duckdb_check, "duckdb"),
         "pandas": (pandas_cases, pandas_check, "pandas")}


def measure(hosts: list[str], sizes: list[int], runs: int, row_by_row_max: int, gpu: bool) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        table = make_table(size)
        for host in hosts:
            make, check, _ = HOSTS[host]
            for udf in UDFS:
                cases = make(table, udf, gpu)
                check(cases)
                result = {"host": host, "udf": udf, "rows": size}
                for method, fn in cases.items():
                    if method == "row_by_row" and size > row_by_row_max:
                        continue
                    result[f"{method}_ms"] = round(best(fn, runs if method != "row_by_row" else 1), 3)
                rows.append(result)
                print(_line(result), flush=True)
    return rows


def _line(r: dict[str, Any]) -> str:
    parts = [f"{r['host']:7} {r['udf']:12} {r['rows']:>9,}"]
    for method in ("row_by_row", "arrowdev", "arrowdev_gpu", "native", "identity", "numpy_arrow", "pyarrow_arrow"):
        if f"{method}_ms" in r:
            parts.append(f"{method} {r[f'{method}_ms']:9.2f}")
    ratios = []
    if "row_by_row_ms" in r:
        ratios.append(f"row-by-row/arrowdev {r['row_by_row_ms'] / r['arrowdev_ms']:6.1f}x")
    ratios.append(f"arrowdev/native {r['arrowdev_ms'] / r['native_ms']:5.2f}")
    if "identity_ms" in r:
        ratios.append(f"arrowdev/identity {r['arrowdev_ms'] / r['identity_ms']:5.2f}")
    if "numpy_arrow_ms" in r:
        ratios.append(f"arrowdev/numpy_arrow {r['arrowdev_ms'] / r['numpy_arrow_ms']:5.2f}")
    if "pyarrow_arrow_ms" in r:
        ratios.append(f"arrowdev/pyarrow_arrow {r['arrowdev_ms'] / r['pyarrow_arrow_ms']:5.2f} "
                      f"(pyarrow_arrow/identity {r['pyarrow_arrow_ms'] / r['identity_ms']:5.2f})")
    if "arrowdev_gpu_ms" in r:
        ratios.append(f"gpu/native {r['arrowdev_gpu_ms'] / r['native_ms']:5.2f}")
    return "  ".join(parts) + "   " + "  ".join(ratios)


def fixed_cost(repeats: int = 20_000) -> dict[str, Any]:
    """Microseconds per CPU ``col.apply(piecewise)`` and per ``col.apply(lambda x: x * 2 + 1)`` on 2048 rows
    (DuckDB's vector), against NumPy's ``x * 2 + 1`` over the same array; each the best of 7 loops."""
    x = np.random.default_rng(1).random(2048)
    col = ad.column(pa.array(x))

    def twice_plus_one(v):
        return v * 2 + 1

    def per_call(fn: Callable[[], Any]) -> float:
        fn()
        fn()
        loops = []
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            loops.append((time.perf_counter() - start) / repeats)
        return round(min(loops) * 1e6, 2)
    return {"rows": 2048, "numpy_us": per_call(lambda: x * 2 + 1),
            "arrowdev_us": per_call(lambda: col.apply(twice_plus_one)),
            "arrowdev_piecewise_us": per_call(lambda: col.apply(piecewise))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--row-by-row-max", type=int, default=1_000_000,
                        help="largest size at which the hosts' row-by-row UDFs run (they take seconds past it)")
    parser.add_argument("--hosts", nargs="+", default=list(HOSTS), choices=list(HOSTS))
    parser.add_argument("--gpu", action="store_true", help="also arrowdev with device='cuda' (needs CuPy, a GPU)")
    record.add_json_option(parser, "bench_hosts")
    args = parser.parse_args()
    hosts = []
    for host in args.hosts:
        try:
            __import__(HOSTS[host][2])
            hosts.append(host)
        except ImportError:
            print(f"{host}: not installed here, skipped")
    load_before = os.getloadavg()
    cost = fixed_cost()
    print(f"fixed cost at 2048 rows: NumPy x * 2 + 1 {cost['numpy_us']} us, arrowdev apply {cost['arrowdev_us']} us "
          f"(piecewise {cost['arrowdev_piecewise_us']} us)")
    rows = measure(hosts, args.rows, args.runs, args.row_by_row_max, args.gpu)
    load = [round(v, 2) for v in (*load_before, *os.getloadavg())]
    print(f"load average (1, 5, 15 min) before {load[:3]}, after {load[3:]}; {os.cpu_count()} CPUs")
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    if args.gpu:
        from arrowdev.gpu import runtime

        cp = runtime.cupy()
        machine += ", " + cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    versions = {m: __import__(m).__version__ for m in ("polars", "duckdb", "pandas", "pyarrow", "numba")
                if _importable(m)}
    record.write(args.json, "bench_hosts", machine, rows, fixed_cost=cost, load_average=load, versions=versions,
                 cpus=os.cpu_count())


def _importable(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
