"""arrowdev at scale: a Parquet dataset of number and string columns read partition by partition onto the
workers' GPUs, three UDFs over each partition, and a reduction gathered to the client (docs/distributed.md,
"The way to use arrowdev at scale").

    python3 examples/scale_job.py [--cpu] [--workers N] [--rows N] [--data DIR]

The job, partition by partition (one Dask task for each step; nothing leaves its worker but a few numbers):

1. ``arrowdev.dask.read_parquet(files, device="cuda")``: the row groups, read on the workers onto each
   worker's GPU: decoded there by libcudf where pylibcudf is installed (``arrowdev[cudf13]``), else by PyArrow on
   the worker's CPU and copied over (``device=None`` keeps them in CPU memory);
2. :func:`transform`: ``y`` from a numeric UDF, ``shout`` from a UDF making new strings, ``hit`` from a UDF
   reading two string columns (the filter);
3. :func:`partition_stats`: per partition the row count, sums and counts (on the GPU with CuPy);
   :func:`combine` adds them up on the client. ``output=`` also writes the transformed partitions to Parquet.

benchmarks/bench_scale.py runs this job on 1, 2 and 4 GPUs against the same job in dask-cudf;
tests/test_dask.py checks it on a cluster of CPU workers against :func:`run_in_process`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import arrowdev as ad
import arrowdev.dask as add

COLUMNS = ["id", "x", "s", "cat"]
CATEGORIES = [f"c{i:02d}" for i in range(20)]


# ---- the UDFs (arrowdev compiles each once per worker and type; CUDA kernels on GPU partitions) ----------


def number_udf(x):
    return x * 2.0 + 1.0 if x > 0.5 else x - 1.0


def shout_udf(s):
    return s.upper() + "!"


def hit_udf(shout, cat):
    return shout.startswith("A") and cat == "c07"


def length_udf(s):
    return len(s)


def masked_udf(y, hit):
    return y if hit else 0.0


def transform(t: ad.ArrowTable) -> ad.ArrowTable:
    """The partition with ``y``, ``shout`` and ``hit`` appended."""
    t = t.append_column("y", t.apply(number_udf, columns=["x"]))
    t = t.append_column("shout", t.apply(shout_udf, columns=["s"]))
    return t.append_column("hit", t.apply(hit_udf, columns=["shout", "cat"]))


def _arrays(col: ad.ArrowColumn) -> list[Any]:
    """The column's chunks as CuPy arrays (GPU) or NumPy arrays (CPU), for the reductions."""
    if col.device.type == "cuda":
        return [chunk.to_cupy() for chunk in col.chunks]
    return [chunk.to_pyarrow().to_numpy(zero_copy_only=False) for chunk in col.chunks]


def _sum(col: ad.ArrowColumn) -> Any:
    return sum(a.sum().item() for a in _arrays(col))


def partition_stats(t: ad.ArrowTable) -> dict[str, Any]:
    """Per partition: rows, the sum of ``y``, how many ``x > 0.5``, the characters of ``shout``, the hits and
    the sum of ``y`` over the hits (plain Python numbers: all that travels to the client)."""
    positives = sum(int((a > 0.5).sum()) for a in _arrays(t.column("x")))
    return {"rows": t.num_rows, "sum_y": float(_sum(t.column("y"))), "positives": positives,
            "chars": int(_sum(t.apply(length_udf, columns=["shout"]))),
            "hits": int(_sum(t.column("hit"))),
            "sum_y_hits": float(_sum(t.apply(masked_udf, columns=["y", "hit"])))}


def combine(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The partitions' statistics added up (float sums with ``math.fsum``: the same in any order)."""
    parts = list(parts)
    keys = ["rows", "sum_y", "positives", "chars", "hits", "sum_y_hits"]
    return {k: math.fsum(p[k] for p in parts) if k.startswith("sum") else sum(p[k] for p in parts) for k in keys}


# ---- the job ----------------------------------------------------------------------------------------------


def job_graph(parts: add.PartitionedTable, output: str | None = None) -> list[Any]:
    """The lazy job over a collection of partitions: per-partition statistics (``dask.delayed`` objects), and
    the Parquet files written when ``output`` is given."""
    out = parts.map_partitions(transform)
    graph = [dask.delayed(partition_stats)(p) for p in out.to_delayed()]
    if output is not None:
        graph.append(out.to_parquet(output, compute=False))
    return graph


def run_job(files: Sequence[str] | str, device: str | None = "cuda", output: str | None = None,
            **read_options: Any) -> dict[str, Any]:
    """The job on the current Dask client (or scheduler): read, transform, reduce. ``read_options`` go to
    :func:`arrowdev.dask.read_parquet`."""
    parts = add.read_parquet(files, columns=COLUMNS, device=device, **read_options)
    return finish(dask.compute(*job_graph(parts, output)), output)


def finish(results: Sequence[Any], output: str | None) -> dict[str, Any]:
    """What :func:`run_job` returns from the computed graph: the combined statistics (and the files)."""
    stats = combine(results[:-1] if output is not None else results)
    if output is not None:
        stats["files"] = len(results[-1])
    return stats


def run_in_process(files: Sequence[str], device: str | None = None) -> dict[str, Any]:
    """The same job in this process, row group by row group, without Dask: the reference."""
    stats = []
    for path in files:
        reader = pq.ParquetFile(path)
        for i in range(reader.metadata.num_row_groups):
            t = ad.table(reader.read_row_group(i, columns=COLUMNS))
            stats.append(partition_stats(transform(t.to_device() if device == "cuda" else t)))
    return combine(stats)


# ---- a small dataset to try it on -------------------------------------------------------------------------


def make_table(rows: int, seed: int, first_id: int = 0) -> pa.Table:
    """``rows`` rows of the job's schema, random but fixed by ``seed``: ``id`` int64, ``x`` float64 in [0, 1),
    ``s`` lower-case ASCII strings of 7-20 bytes, ``cat`` one of 20 short category names. Vectorised:
    about 10^7 rows a second on one core."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(7, 21, rows, dtype=np.int32)
    if rows * 20 >= 2**31:
        raise ValueError(f"expected at most {(2**31 - 1) // 20:,} rows a table (int32 string offsets), got {rows:,}")
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    s = pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
    cat = pa.array(CATEGORIES).take(pa.array(rng.integers(0, len(CATEGORIES), rows, dtype=np.int32)))
    return pa.table({"id": pa.array(np.arange(first_id, first_id + rows, dtype=np.int64)),
                     "x": pa.array(rng.random(rows)), "s": s, "cat": cat})


def write_dataset(folder: str, files: int, rows_per_file: int, row_group_rows: int, seed: int = 0) -> list[str]:
    """``files`` Parquet files of ``rows_per_file`` rows in row groups of ``row_group_rows`` (serially; the
    benchmark writes large datasets from several processes)."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"part.{i:05d}.parquet")
        pq.write_table(make_table(rows_per_file, seed * 100_003 + i, i * rows_per_file), path,
                       row_group_size=row_group_rows)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="CPU workers (distributed's LocalCluster), no GPU")
    parser.add_argument("--workers", type=int, default=2, help="workers (one per GPU on GPUs)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", default="scale_job_data")
    args = parser.parse_args()
    files = write_dataset(args.data, files=4, rows_per_file=args.rows // 4, row_group_rows=args.rows // 8)
    from distributed import Client, LocalCluster

    if args.cpu:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0")
    else:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0")
    with cluster, Client(cluster):
        print(run_job(files, device=None if args.cpu else "cuda"))
    print(run_in_process(files, device=None if args.cpu else "cuda"), "(in process)")


if __name__ == "__main__":
    main()
