"""Probe (CPU, not a benchmark against a peer): what one UDF call costs on the small batches engines hand over,
the figures behind docs/hosts.md ("Small frames in Polars and pandas", "Prepared calls for new strings").

- microseconds per call over 2048 strings (a DuckDB vector): the function arrowdev registers with DuckDB (called
  as DuckDB calls it, with a chunked array), ``ArrowColumn.apply``, and PyArrow's ``utf8_upper`` + join beside;
- nanoseconds a row of ``apply`` for string UDFs at 2048 and 2*10^5 rows (what is fixed cost, what is kernel);
- a Polars query at 10^4 rows with an inline expression (new each query), against Polars' own expression and
  an identity ``map_batches``.

Best of several repeats after a warm-up; the machine's load moves every figure, so compare runs side by side (run
it on two checkouts to compare code).

    python3 benchmarks/probes/small_batch_calls.py
"""

from __future__ import annotations

import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import bench_hosts as bh  # noqa: E402

import arrowdev as ad  # noqa: E402


def per_call_us(fn, number: int) -> float:
    fn()
    return 1e6 * min(timeit.repeat(fn, number=number, repeat=3)) / number


def duckdb_function(f, types):
    """The function ``ad.duckdb.register`` hands DuckDB (taken from a stand-in connection's create_function)."""
    import duckdb

    import arrowdev.duckdb  # noqa: F401

    real = duckdb.connect()
    taken = {}

    class Connection:
        def create_function(self, name, fn, *args, **kwargs):
            taken["f"] = fn

        def sql(self, *args):
            return real.sql(*args)

        def from_arrow(self, *args):
            return real.from_arrow(*args)

    ad.duckdb.register(Connection(), "f", f, types)
    return taken["f"]


def main() -> None:
    table = bh.make_table(1_000_000)
    strings = table.column("s").chunk(0)
    vector = pa.concat_arrays([strings.slice(0, 2048)])
    col = ad.column(vector)
    registered = duckdb_function(bh.upper_bang, ["VARCHAR"])
    chunked = pa.chunked_array([vector])
    print("per call, 2048 strings, s.upper() + '!':")
    print(f"  the DuckDB function  {per_call_us(lambda: registered(chunked), 2000):7.1f} us")
    print(f"  ArrowColumn.apply    {per_call_us(lambda: col.apply(bh.upper_bang), 2000):7.1f} us")
    pyarrow_us = per_call_us(lambda: pc.binary_join_element_wise(pc.utf8_upper(vector), "!", ""), 2000)
    print(f"  PyArrow (upper+join) {pyarrow_us:7.1f} us")

    print("apply, ns a row:")
    udfs = {"len(s)": lambda s: len(s), "s": lambda s: s, "s + '!'": lambda s: s + "!",
            "s.upper()": lambda s: s.upper(), "s.upper() + '!'": bh.upper_bang}
    for rows in (2048, 200_000):
        c = ad.column(pa.concat_arrays([strings.slice(0, rows)]))
        for name, f in udfs.items():
            number = 200 if rows < 10_000 else 5
            print(f"  {rows:>7,} rows  {name:16s} {1e3 * per_call_us(lambda: c.apply(f), number) / rows:6.1f}")

    import polars as pl

    import arrowdev.polars  # noqa: F401

    df = pl.from_arrow(bh.make_table(10_000))
    x = pl.col("x")
    queries = {
        "arrowdev, inline expression": lambda: df.select(ad.polars.udf(bh.piecewise, "x")),
        "Polars when/then/otherwise": lambda: df.select(pl.when(x > 0.5).then(x * 2 + 1).otherwise(x - 1)),
        "identity map_batches": lambda: df.select(x.map_batches(lambda s: s, return_dtype=pl.Float64)),
    }
    print("Polars query, 10^4 rows, x * 2 + 1 if x > 0.5 else x - 1 (best of 300):")
    for name, q in queries.items():
        q()
        best = float("inf")
        for _ in range(300):
            t0 = time.perf_counter()
            q()
            best = min(best, time.perf_counter() - t0)
        print(f"  {name:28s} {best * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
