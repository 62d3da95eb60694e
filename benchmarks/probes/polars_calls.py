"""Probe (CPU): what a Polars query with an arrowdev UDF costs at small sizes, beside Polars' own. For a one-column
and a two-column numeric UDF over 10^4 rows: the query with Polars' native expression, with an identity
``map_batches`` (Polars' own cost of calling Python), with the NumPy function a user writes by hand for it (the
two-column UDF's vectorized form: the same Python call and a new Series), with ``ad.polars.udf`` by column names
and through a struct, and by names once more with the expression made once and kept;
best and median microseconds, and the process's CPU time over wall time (above 1: Polars' other threads were
busy meanwhile); then the direct call of the UDF as Polars makes it, outside a query. The figures behind
docs/hosts.md's small-batch Polars notes. Run it also with ``POLARS_MAX_THREADS=1``.

    python3 benchmarks/probes/polars_calls.py [--rows 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import polars as pl

import arrowdev as ad
import arrowdev.polars  # noqa: F401


def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def two_columns(x, y):
    return x * y if x > 0.5 else y


def two_columns_numpy(series):
    x, y = series[0].to_numpy(), series[1].to_numpy()
    return pl.Series(np.where(x > 0.5, x * y, y))


def timed(fn, calls: int) -> tuple[float, float, float]:
    """(best us, median us, CPU time / wall time) of ``calls`` calls after a warm-up."""
    for _ in range(20):
        fn()
    times = []
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return 1e6 * min(times), 1e6 * statistics.median(times), cpu / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"x": rng.random(args.rows), "y": rng.random(args.rows)})
    x, y = pl.col("x"), pl.col("y")
    kept = ad.polars.udf(two_columns, "x", "y")  # made once, as a user who runs the query again may keep it
    cases = {
        "one column, native": lambda: df.select(pl.when(x > 0.5).then(x * 2 + 1).otherwise(x - 1)),
        "one column, identity map_batches": lambda: df.select(x.map_batches(lambda s: s, return_dtype=pl.Float64)),
        "one column, arrowdev": lambda: df.select(ad.polars.udf(piecewise, "x")),
        "two columns, native": lambda: df.select(pl.when(x > 0.5).then(x * y).otherwise(y)),
        "two columns, identity map_batches": lambda: df.select(
            pl.map_batches(["x", "y"], lambda s: s[0], return_dtype=pl.Float64)),
        "two columns, NumPy map_batches": lambda: df.select(
            pl.map_batches(["x", "y"], two_columns_numpy, return_dtype=pl.Float64)),
        "two columns, arrowdev": lambda: df.select(ad.polars.udf(two_columns, "x", "y")),
        "two columns, arrowdev, expression kept": lambda: df.select(kept),
        "two columns, arrowdev through a struct": lambda: df.select(
            pl.struct("x", "y").map_batches(ad.polars.udf(two_columns))),
    }
    print(f"Polars {pl.__version__}, {args.rows} rows, {args.queries} queries each")
    for name, fn in cases.items():
        best, median, busy = timed(fn, args.queries)
        print(f"{name:42s} best {best:7.1f} us  median {median:7.1f} us  CPU/wall {busy:4.2f}")
    call = ad.polars.udf(two_columns)
    series = [df["x"], df["y"]]
    best, median, _ = timed(lambda: call(series, return_dtype=pl.Float64), 20 * args.queries)
    print(f"{'two columns, the call outside a query':42s} best {best:7.1f} us  median {median:7.1f} us")


if __name__ == "__main__":
    main()
