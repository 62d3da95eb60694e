"""Probe (GPU): where the time of a fresh device table's first serialize goes.

A table copied to the GPU (``to_host().to_device()``, as a worker's own computation leaves it) is planned
once, at its first send or ``sizeof``; this times that planning and its parts (the columns' chunks and trees,
the walk, the schema), distributed's serialize of it with and without the plan kept, and prints a profile.
The string column is cut into ``--chunks`` chunks (bench_dask's table at 10^8 rows has 24), so the planning's
work is that of the large table at a tenth of the bytes.

    python3 benchmarks/probes/fresh_table_plan.py [--rows N] [--chunks C] [--repeats R]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.core import chunks as _chunked, layout
from arrowdev.serialize import frames as _serialize  # noqa: E402
from bench_dask import make_table  # noqa: E402


def rechunked(tbl: ad.ArrowTable, chunks: int) -> ad.ArrowTable:
    pt = tbl.to_pyarrow()
    s = pt.column("s").combine_chunks()
    cuts = np.linspace(0, len(s), chunks + 1).astype(int)
    parts = pa.chunked_array([s.slice(lo, hi - lo) for lo, hi in zip(cuts[:-1], cuts[1:])])
    return ad.table({"a": pt.column("a").combine_chunks(), "b": pt.column("b").combine_chunks(), "s": parts})


def fresh(tbl: ad.ArrowTable) -> ad.ArrowTable:
    made = tbl.to_host().to_device()
    ad.cuda.runtime.cupy().cuda.runtime.deviceSynchronize()
    return made


def parts(obj: ad.ArrowTable) -> dict[str, float]:
    """The planning's steps, each timed on its own over a fresh table (as _serialize._make_plan runs them)."""
    out = {}
    t0 = time.perf_counter()
    kind, columns = _serialize._kind_and_columns(obj)
    t1 = time.perf_counter()
    chunks = [(_chunked.chunks(c), _chunked.null_counts(c)) for c in columns]
    t2 = time.perf_counter()
    trees = [[(col.type, layout.Node.of(h), 0, h.length, -1 if n is None else n) for h, n in zip(hs, ns)]
             for col, (hs, ns) in zip(columns, chunks)]
    t3 = time.perf_counter()
    read = _chunked.planning_reader(columns, True)
    planner = _serialize._SpanPlanner()
    planner.read = read
    [[_serialize._encode(planner.plan(*tree)) for tree in col_trees] for col_trees in trees]
    fetched = isinstance(read, layout.BatchReader) and read.fetch()
    t4 = time.perf_counter()
    _serialize._schema_bytes(obj.schema)
    t5 = time.perf_counter()
    out.update(columns=t1 - t0, chunks=t2 - t1, trees=t3 - t2, walk=t4 - t3, schema=t5 - t4, reads=float(fetched))
    return out


def first_send(gtbl: ad.ArrowTable, repeats: int) -> None:
    """distributed's ``cuda``-family serialize of a fresh table without a kept plan (planned then), and again
    with the plan kept: what a send from a worker costs, since the worker's ``sizeof`` of a task's result
    plans it when the task ends."""
    from distributed.protocol import serialize

    serialize(fresh(gtbl), serializers=("cuda",))
    first, second = [], []
    for _ in range(repeats):
        made = fresh(gtbl)
        t0 = time.perf_counter()
        serialize(made, serializers=("cuda",))
        t1 = time.perf_counter()
        serialize(made, serializers=("cuda",))
        first.append(t1 - t0)
        second.append(time.perf_counter() - t1)
    print(f"distributed serialize (cuda family) of a fresh table: first send median "
          f"{statistics.median(first) * 1e3:.3f} ms ({', '.join(f'{x * 1e3:.2f}' for x in first)}), "
          f"with the plan kept (after sizeof) {statistics.median(second) * 1e3:.3f} ms")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--chunks", type=int, default=24, help="chunks of the string column (a and b: one each)")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    gtbl = rechunked(make_table(args.rows), args.chunks).to_device()
    whole, split = [], []
    for _ in range(args.repeats):
        made = fresh(gtbl)
        t0 = time.perf_counter()
        _, spans = _serialize._plan(made, made.device, ready=True)
        whole.append(time.perf_counter() - t0)
        split.append(parts(fresh(gtbl)))
    print(f"{args.rows:,} rows, string column in {args.chunks} chunks, {len(spans)} spans; a fresh table's "
          f"planning: median {statistics.median(whole) * 1e3:.3f} ms (all: "
          f"{', '.join(f'{w * 1e3:.2f}' for w in whole)})")
    for step in split[0]:
        print(f"  {step}: median {statistics.median(s[step] for s in split) * 1e3:.3f}"
              + ("" if step != "reads" else " (1: the walk read the device)"))
    first_send(gtbl, args.repeats)
    made = [fresh(gtbl) for _ in range(args.repeats)]
    profile = cProfile.Profile()
    profile.enable()
    for m in made:
        _serialize._plan(m, m.device, ready=True)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
