"""CPU UDF kernels run without the GIL, so engines that call a UDF from several threads (DuckDB, a thread pool)
run them at once: each thread's kernel finds its own arena and row flag (the native core's per-thread slots,
capsules/kernel_slots.h, through arrowdev/udf/compile/strings/managed.py), and results stay what Python gives."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad

WORDS = np.array(["alpha", "beta", "Gamma", "épsilon", "z", "日本", "", "12", " -7 "])


def shout(s):
    return s.upper() + "!"


def doubled_or_replaced(s):
    return s.replace("a", "<>") if len(s) > 3 else s + s


def parsed_or_null(s):
    return int(s) * 2  # a row int() cannot parse becomes null: the kernel's row flag


def _python(f, values):
    out = []
    for v in values:
        try:
            out.append(None if v is None else f(v))
        except ValueError:
            out.append(None)
    return out


@pytest.mark.parametrize("udf", [shout, doubled_or_replaced, parsed_or_null])
def test_string_udfs_called_from_many_threads_at_once_give_what_python_gives(udf):
    columns = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        values = [None if rng.random() < 0.05 else str(w) for w in WORDS[rng.integers(0, len(WORDS), 20_000 + seed)]]
        columns.append((ad.column(pa.array(values, pa.string())), _python(udf, values)))
    columns[0][0].apply(udf)  # compiled once, before the threads

    def calls(k: int) -> int:
        col, want = columns[k]
        for _ in range(6):
            assert col.apply(udf).to_pylist() == want
        return k

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(calls, range(8))) == list(range(8))


def test_a_cpu_string_kernel_lets_other_threads_run():
    col = ad.column(pa.array(WORDS[np.random.default_rng(1).integers(0, len(WORDS), 3_000_000)]))
    col.apply(shout)
    start = time.perf_counter()
    col.apply(shout)
    alone = time.perf_counter() - start
    gaps, done = [], threading.Event()
    worker = threading.Thread(target=lambda: (col.apply(shout), done.set()))
    last = time.perf_counter()
    worker.start()
    while not done.is_set():  # this thread's waits for the GIL while the other one's kernel runs
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    # holding the GIL, the kernels stopped this loop for a large part of the call (0.15 of 0.37 s here); without
    # it, no wait past the interpreter's switch interval (5 ms) but where the machine itself is busy
    stopped = sum(gap for gap in gaps if gap > 0.006)
    assert stopped < alone / 5, (stopped, max(gaps), alone)


def test_duckdb_string_functions_on_several_threads_equal_its_own_sql():
    duckdb = pytest.importorskip("duckdb")
    import arrowdev.duckdb  # noqa: F401

    con = duckdb.connect()
    con.sql("SET threads=4")
    rng = np.random.default_rng(2)
    con.register("source", pa.table({"s": pa.array(WORDS[rng.integers(0, len(WORDS), 200_000)])}))
    con.sql("CREATE TABLE t AS SELECT * FROM source")
    ad.duckdb.register(con, "shout", shout, ["VARCHAR"])
    ad.duckdb.register(con, "swap", lambda s: s.replace("a", "<>"), ["VARCHAR"])
    for _ in range(3):
        assert con.sql("SELECT list(shout(s) ORDER BY rowid) FROM t").fetchall() == \
            con.sql("SELECT list(upper(s) || '!' ORDER BY rowid) FROM t").fetchall()
        assert con.sql("SELECT list(swap(s) ORDER BY rowid) FROM t").fetchall() == \
            con.sql("SELECT list(replace(s, 'a', '<>') ORDER BY rowid) FROM t").fetchall()
