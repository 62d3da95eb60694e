"""Probe (CPU): what a string-making DuckDB function costs, arrowdev's against the same work done by PyArrow's
compute functions (``bench_hosts.PYARROW``), for bench_hosts.py's string UDFs:

1. one call on a vector of 2048 rows outside DuckDB (the function DuckDB calls, as ``ad.duckdb.register`` makes
   it, against PyArrow's functions on the same PyArrow array): best and median microseconds; then the mean call
   split into arrowdev's kernel, its output made from the kernel's pairs (the gather, offsets and validity: the
   prepared call's compiled ``finish``, or ``string_gathers.gather_with_offsets`` on the general way), and the rest
   (the Python around them), timed around each;
2. ``SELECT sum(length(f(s))) FROM t`` over ``--rows`` rows on one DuckDB thread and on ``--threads`` (identity,
   PyArrow's functions, arrowdev; best of 5 after a warm-up), with each one's ratio to the identity.

    python3 benchmarks/probes/duckdb_string_calls.py [--rows 1000000] [--threads 2] [--udfs upper! concat replace]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_hosts import PYARROW, UDFS, make_table  # noqa: E402

import arrowdev as ad  # noqa: E402
import arrowdev.duckdb  # noqa: E402,F401
from arrowdev.udf.run import prepared_host, string_gathers  # noqa: E402


class _Capturing:
    """A DuckDB connection that keeps the functions registered through it (the one ``ad.duckdb.register`` makes)."""

    def __init__(self, con: Any) -> None:
        self.con, self.functions = con, {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)

    def create_function(self, name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        self.functions[name] = fn
        return self.con.create_function(name, fn, *args, **kwargs)


def _times(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    for _ in range(20):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6, statistics.median(times) * 1e6


def one_vector(udf: str, calls: int) -> None:
    import duckdb

    con = _Capturing(duckdb.connect())
    ad.duckdb.register(con, "f", UDFS[udf][0], ["VARCHAR"])
    vector = pa.chunked_array([make_table(2048).column("s").combine_chunks()])
    mine, theirs = _times(lambda: con.functions["f"](vector), calls), _times(lambda: PYARROW[udf](vector), calls)
    print(f"{udf:8s} one 2048-row call: arrowdev {mine[0]:6.1f} / {mine[1]:6.1f} us (best / median), "
          f"PyArrow {theirs[0]:6.1f} / {theirs[1]:6.1f}; arrowdev / PyArrow {mine[0] / theirs[0]:4.2f} (best)")
    print(f"{udf:8s} {_split(lambda: con.functions['f'](vector), calls)}")


def _split(call: Callable[[], Any], calls: int) -> str:
    """The mean of ``calls`` calls split into the prepared string calls' kernels, their outputs' making (gathers)
    and the rest."""
    spent = {"kernel": 0.0, "gather": 0.0}

    def timed(fn: Callable, key: str) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
        return wrapper
    prepared = [c for c in prepared_host._calls.values() if isinstance(c, prepared_host.HostStringCall)]
    kernels = [(c.kernel, c.finish) for c in prepared]
    gather = string_gathers.gather_with_offsets
    for c in prepared:
        c.kernel = timed(c.kernel, "kernel")
        c.finish = timed(c.finish, "gather") if c.finish is not None else None
    string_gathers.gather_with_offsets = timed(gather, "gather")
    try:
        start = time.perf_counter()
        for _ in range(calls):
            call()
        total = (time.perf_counter() - start) / calls * 1e6
    finally:
        for c, (kernel, finish) in zip(prepared, kernels):
            c.kernel, c.finish = kernel, finish
        string_gathers.gather_with_offsets = gather
    kernel, gather_us = spent["kernel"] / calls * 1e6, spent["gather"] / calls * 1e6
    return (f"mean call {total:6.1f} us: kernel {kernel:5.1f}, output (gather) {gather_us:4.1f}, "
            f"the rest (Python) {total - kernel - gather_us:5.1f}")


def queries(udf: str, table: pa.Table, threads: int) -> None:
    import duckdb

    con = duckdb.connect()
    con.sql(f"SET threads={threads}")
    con.register("source", table)
    con.sql("CREATE TABLE t AS SELECT * FROM source")
    ad.duckdb.register(con, "arrowdev", UDFS[udf][0], ["VARCHAR"])
    con.create_function("pyarrow_arrow", PYARROW[udf], ["VARCHAR"], "VARCHAR", type="arrow", null_handling="special")
    con.create_function("identity", lambda a: a, ["VARCHAR"], "VARCHAR", type="arrow", null_handling="special")
    best = {}
    for name in ("identity", "pyarrow_arrow", "arrowdev"):
        sql = f"SELECT sum(length({name}(s))) FROM t"
        con.sql(sql).fetchall()
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            con.sql(sql).fetchall()
            runs.append(time.perf_counter() - start)
        best[name] = min(runs) * 1e3
    print(f"{udf:8s} {threads} DuckDB thread(s): identity {best['identity']:6.1f} ms, "
          f"PyArrow {best['pyarrow_arrow']:6.1f} ({best['pyarrow_arrow'] / best['identity']:4.2f}x), "
          f"arrowdev {best['arrowdev']:6.1f} "
          f"({best['arrowdev'] / best['identity']:4.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads of the second query run")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--udfs", nargs="+", default=list(PYARROW), choices=list(PYARROW))
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for udf in args.udfs:
        one_vector(udf, args.calls)
    table = make_table(args.rows)
    for udf in args.udfs:
        for threads in (1, args.threads):
            queries(udf, table, threads)


if __name__ == "__main__":
    main()
