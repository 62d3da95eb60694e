"""Probe (GPU, one process, no Dask): where one partition of bench_scale's job spends its GPU time, arrowdev
against cuDF on the same file: the Parquet read (and its steps: footer, libcudf's decode, taking the columns
over), the transform and the statistics. Each step ends with a device synchronisation, so a step's time is its
GPU work and not the previous step's tail; medians of ``--repeats`` runs after a warm-up.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/scale_partition.py [--rows 25000000] [--rmm-pool]

``--rmm-pool``: RMM's pool for libcudf's and cuDF's allocations (``rmm.reinitialize(pool_allocator=True)``), as
dask-cuda's ``rmm_pool_size`` gives a worker; without it both read through RMM's default (cudaMalloc).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scale_data  # noqa: E402
import scale_job  # noqa: E402  (scale_data puts examples/ on the path)
from bench_scale import peer_stats, peer_transform  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.integrations.dask import parquet  # noqa: E402
from arrowdev.integrations.dask.partitions import Piece  # noqa: E402


def timed(step: Callable[[], Any], repeats: int, sync: Callable[[], None]) -> tuple[float, Any]:
    """Median milliseconds of ``step`` (synchronised), and its last result."""
    times, out = [], None
    for i in range(repeats + 1):
        out = None
        sync()
        t0 = time.perf_counter()
        out = step()
        sync()
        if i:
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rmm-pool", action="store_true")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    import cupy as cp
    import pyarrow.parquet as pq

    if args.rmm_pool:
        import rmm

        rmm.reinitialize(pool_allocator=True, initial_pool_size=16 << 30)
    folder = args.data_dir or str(Path(tempfile.gettempdir()) / f"arrowdev-probe-{args.rows}")
    path = scale_data.ensure(folder, args.rows, 1)[0]
    meta = pq.read_metadata(path)
    print(f"{path}: {args.rows:,} rows, {meta.num_row_groups} row groups, "
          f"{Path(path).stat().st_size / 1e9:.2f} GB of Parquet; RMM pool: {args.rmm_pool}", flush=True)
    sync = cp.cuda.Device().synchronize
    pieces = (Piece(path, 0, 0, args.rows),) if meta.num_row_groups == 1 else None
    results: dict[str, float] = {}

    def note(name: str, ms: float) -> None:
        results[name] = ms
        print(f"  {name:<44} {ms:9.2f} ms", flush=True)

    import cudf
    import pylibcudf as plc

    note("footer (pq.read_metadata)", timed(lambda: pq.read_metadata(path), args.repeats, sync)[0])

    def plc_read() -> Any:
        opts = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo([path]))
        columns = scale_job.COLUMNS
        opts = opts.column_names(columns) if hasattr(opts, "column_names") else opts.columns(columns)
        return plc.io.parquet.read_parquet(opts.build())

    ms, got = timed(plc_read, args.repeats, sync)
    note("libcudf read (pylibcudf, whole file)", ms)
    note("  columns taken over (ad.column per column)",
         timed(lambda: [ad.column(c) for c in got.columns], args.repeats, sync)[0])
    del got
    if pieces is not None:
        ms, tbl = timed(lambda: parquet._read_partition(pieces, scale_job.COLUMNS, "cuda", engine="cudf"),
                        args.repeats, sync)
        note("arrowdev read (engine='cudf', one partition)", ms)
    else:
        tbl = ad.table(pq.read_table(path, columns=scale_job.COLUMNS)).to_device()
    ms, df = timed(lambda: cudf.read_parquet(path, columns=scale_job.COLUMNS), args.repeats, sync)
    note("cudf.read_parquet", ms)

    ms, out = timed(lambda: scale_job.transform(tbl), args.repeats, sync)
    note("arrowdev transform (3 UDFs)", ms)
    for name, udf, cols in (("number_udf", scale_job.number_udf, ["x"]), ("shout_udf", scale_job.shout_udf, ["s"]),
                            ("hit_udf", scale_job.hit_udf, ["shout", "cat"])):
        note(f"  {name}", timed(lambda: out.apply(udf, columns=cols), args.repeats, sync)[0])
    note("arrowdev stats", timed(lambda: scale_job.partition_stats(out), args.repeats, sync)[0])
    ms, pout = timed(lambda: peer_transform(df, "native"), args.repeats, sync)
    note("cuDF transform (native methods)", ms)
    note("cuDF stats", timed(lambda: peer_stats(pout), args.repeats, sync)[0])
    a = scale_job.partition_stats(out)
    b = peer_stats(pout)
    print("equal statistics:", {k: (a[k], b[k]) for k in a if a[k] != b[k]} or "yes", flush=True)
    total_ad = results.get("arrowdev read (engine='cudf', one partition)", 0) + results["arrowdev transform (3 UDFs)"] \
        + results["arrowdev stats"]
    total_cudf = results["cudf.read_parquet"] + results["cuDF transform (native methods)"] + results["cuDF stats"]
    print(f"per partition: arrowdev {total_ad:.1f} ms, cuDF {total_cudf:.1f} ms ({total_cudf / total_ad:.2f}x)")


if __name__ == "__main__":
    main()
