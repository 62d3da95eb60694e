"""Probe (GPU, one process): the scale job's ``transform`` step by step, each step synchronised, against the
same UDF calls timed alone (scale_partition.py found ``transform`` at 5 * 10^7 rows 36 ms where its three UDF
calls timed alone add up to 22 ms). Medians of ``--repeats`` after a warm-up; then a profile of one transform.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/transform_steps.py [--rows 50000000]

The partition is read by libcudf where pylibcudf is installed (as the scale job's workers read it), else by
PyArrow (one chunk a column) and copied to the GPU.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scale_data  # noqa: E402
import scale_job  # noqa: E402

import arrowdev as ad  # noqa: E402


def read(path: str) -> ad.ArrowTable:
    try:
        import pylibcudf as plc
    except ImportError:
        import pyarrow.parquet as pq

        return ad.table(pq.read_table(path, columns=scale_job.COLUMNS).combine_chunks()).to_device()
    opts = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo([path]))
    opts = opts.column_names(scale_job.COLUMNS) if hasattr(opts, "column_names") else opts.columns(scale_job.COLUMNS)
    got = plc.io.parquet.read_parquet(opts.build())
    return ad.table({n: ad.column(c) for n, c in zip(scale_job.COLUMNS, got.columns)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import cupy as cp

    sync = cp.cuda.Device().synchronize
    path = scale_data.ensure(Path(tempfile.gettempdir()) / f"arrowdev-probe-{args.rows}", args.rows, 1)[0]
    tbl = read(path)
    sync()
    steps: dict[str, list[float]] = {}

    def step(name: str, fn: Any) -> Any:
        sync()
        t0 = time.perf_counter()
        got = fn()
        sync()
        steps.setdefault(name, []).append(1e3 * (time.perf_counter() - t0))
        return got

    for i in range(args.repeats + 1):
        if i == 1:
            steps.clear()
        t = tbl
        y = step("1 apply number_udf", lambda: t.apply(scale_job.number_udf, columns=["x"]))
        t = step("  append y", lambda: t.append_column("y", y))
        shout = step("2 apply shout_udf", lambda: t.apply(scale_job.shout_udf, columns=["s"]))
        t = step("  append shout", lambda: t.append_column("shout", shout))
        hit = step("3 apply hit_udf", lambda: t.apply(scale_job.hit_udf, columns=["shout", "cat"]))
        t = step("  append hit", lambda: t.append_column("hit", hit))
        step("4 partition_stats", lambda: scale_job.partition_stats(t))
        del t, y, shout, hit
        step("transform (whole)", lambda: scale_job.transform(tbl))
        out = step("transform kept", lambda: scale_job.transform(tbl))
        step("  shout_udf again, alone", lambda: tbl.apply(scale_job.shout_udf, columns=["s"]))
        step("  hit_udf again on the kept output", lambda: out.apply(scale_job.hit_udf, columns=["shout", "cat"]))
        step("  partition_stats of the kept output", lambda: scale_job.partition_stats(out))
        del out
    for name, times in steps.items():
        print(f"  {name:<40} {statistics.median(times):9.2f} ms  (min {min(times):.2f}, max {max(times):.2f})",
              flush=True)
    print("memory:", {k: v for k, v in ad.cuda.memory_stats().items() if "bytes" in k}, flush=True)
    prof = cProfile.Profile()
    sync()
    prof.enable()
    scale_job.transform(tbl)
    sync()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
