"""Probe (CPU): what a vectorized DuckDB function costs per vector, from DuckDB's floor up, in
``SELECT sum(f(x)) FROM t`` over 10^6 float64 rows, for one and two DuckDB threads (best of 9 after a warm-up):

- ``identity``: an Arrow UDF returning its input (DuckDB's floor, as in bench_hosts.py);
- ``fresh``: one returning a new array of the vector's length, nothing computed (the floor of any UDF that makes
  its result);
- ``by_hand``: arrowdev's compiled kernel for ``x * 2 + 1 if x > 0.5 else x - 1`` called from the shortest Python
  function that can call it (one chunk, no checks): the floor of a compiled UDF called from Python;
- ``arrowdev``: ``ad.duckdb.register`` of the same UDF.

Each is printed with its ratio to the identity and its time above the identity per vector of 2048 rows.

    python3 benchmarks/probes/duckdb_vectors.py [--rows N] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pyarrow as pa


def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def one(rows: int, threads: int) -> None:
    import duckdb

    import arrowdev as ad
    import arrowdev.duckdb  # noqa: F401
    from arrowdev.udf.run import prepared_host

    con = duckdb.connect()
    con.sql(f"SET threads={threads}")
    con.register("source", pa.table({"x": np.random.default_rng(0).random(rows)}))
    con.sql("CREATE TABLE t AS SELECT * FROM source")
    ad.duckdb.register(con, "arrowdev", piecewise, ["DOUBLE"])
    con.sql("SELECT sum(arrowdev(x)) FROM t").fetchall()  # compiles, prepares the layout's call
    call = next(c for c in prepared_host._calls.values() if c is not None)
    kernel, take, stand_in = call.kernel, call.recycled.take, prepared_host._STAND_IN
    f64, float64 = pa.float64(), np.dtype(np.float64)

    def fresh(a):
        n = len(a)
        return pa.Array.from_buffers(f64, n, [None, pa.py_buffer(take(n, float64))], 0, 0)

    def by_hand(a):
        c = a.chunk(0)
        n, offset = len(c), c.offset
        out = take(n, float64)
        data = np.frombuffer(prepared_host._ANY.from_address(c.buffers()[1].address), float64, offset + n)
        kernel(n, 0, out, stand_in, 0, data, stand_in, offset, 0)
        return pa.Array.from_buffers(f64, n, [None, pa.py_buffer(out)], 0, 0)

    for name, f in (("identity", lambda a: a), ("fresh", fresh), ("by_hand", by_hand)):
        con.create_function(name, f, ["DOUBLE"], "DOUBLE", type="arrow", null_handling="special")
    want = con.sql("SELECT sum(x * 2 + 1) FILTER (x > 0.5) + sum(x - 1) FILTER (x <= 0.5) FROM t").fetchall()[0][0]
    for name in ("by_hand", "arrowdev"):
        assert math.isclose(con.sql(f"SELECT sum({name}(x)) FROM t").fetchall()[0][0], want, rel_tol=1e-9)

    def best(name: str, runs: int = 9) -> float:
        sql = f"SELECT sum({name}(x)) FROM t"
        con.sql(sql).fetchall()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            con.sql(sql).fetchall()
            times.append(time.perf_counter() - start)
        return min(times) * 1e3

    results = {name: best(name) for name in ("identity", "fresh", "by_hand", "arrowdev")}
    vectors = -(-rows // 2048)
    print(f"threads {threads}: " + "  ".join(f"{k} {v:6.1f} ms ({v / results['identity']:4.2f}x)"
                                            for k, v in results.items())
          + "  -> above the identity per vector: "
          + "  ".join(f"{k} {(v - results['identity']) / vectors * 1e3:5.1f} us" for k, v in results.items()
                      if k != "identity"),
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    for threads in args.threads:
        one(args.rows, threads)


if __name__ == "__main__":
    main()
