"""The dataset of benchmarks/bench_scale.py: seeded Parquet files of examples/scale_job.py's schema, written by
several processes at once and reused when a folder already holds the same dataset.

Each file is one partition of the strong-scaling run (``rows / files`` rows), written in row groups of
``row_group_rows`` rows; file ``i`` is made from seed ``(seed, i)`` alone, so the same arguments give the same
bytes whatever the number of processes. A finished folder holds ``_dataset.json`` (written last), naming the
arguments: a folder whose description differs is written again.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import sys
import time
from typing import Any

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import scale_job  # noqa: E402

_VERSION = 1  # of the data's recipe: a change of make_table's output must change it


def describe(rows: int, files: int, row_group_rows: int, seed: int) -> dict[str, Any]:
    return {"version": _VERSION, "rows": rows, "files": files, "row_group_rows": row_group_rows, "seed": seed,
            "columns": scale_job.COLUMNS}


def file_names(folder: pathlib.Path, files: int) -> list[str]:
    return [str(folder / f"part.{i:05d}.parquet") for i in range(files)]


def _write_file(path: str, rows: int, first_id: int, row_group_rows: int, seed: int, index: int) -> str:
    import pyarrow.parquet as pq

    table = scale_job.make_table(rows, seed * 100_003 + index, first_id)
    tmp = f"{path}.tmp-{os.getpid()}"
    pq.write_table(table, tmp, row_group_size=row_group_rows)
    os.replace(tmp, path)
    return path


def ensure(folder: str | pathlib.Path, rows: int, files: int, row_group_rows: int | None = None, seed: int = 0,
           processes: int | None = None) -> list[str]:
    """The dataset's files in ``folder``, written (by ``processes`` processes, default: one per core, at most
    16 and one per file) unless the folder already holds exactly this dataset."""
    if rows % files:
        raise ValueError(f"expected rows divisible by files (a partition each), got {rows:,} rows and {files} files")
    per_file = rows // files
    row_group_rows = row_group_rows or per_file
    folder = pathlib.Path(folder)
    want = describe(rows, files, row_group_rows, seed)
    marker = folder / "_dataset.json"
    paths = file_names(folder, files)
    if marker.exists() and json.loads(marker.read_text()) == want and all(os.path.exists(p) for p in paths):
        print(f"dataset: reusing {folder} ({rows:,} rows in {files} files)", flush=True)
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    for stale in folder.glob("part.*.parquet"):
        stale.unlink()
    processes = max(1, min(processes or os.cpu_count() or 1, 16, files))
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(processes) as pool:
        jobs = [pool.submit(_write_file, p, per_file, i * per_file, row_group_rows, seed, i) for i, p in enumerate(paths)]
        for job in jobs:
            job.result()
    marker.write_text(json.dumps(want) + "\n")
    size = sum(os.path.getsize(p) for p in paths)
    print(f"dataset: wrote {rows:,} rows in {files} files ({size / 1e9:.2f} GB of Parquet) to {folder} in "
          f"{time.perf_counter() - t0:.1f} s with {processes} processes", flush=True)
    return paths


def warmup_file(folder: str | pathlib.Path, rows: int = 10_000) -> str:
    """A small file of the same schema beside the dataset (not one of its files), for warm-ups."""
    path = pathlib.Path(folder) / "_warmup" / "warmup.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(str(path), rows, 0, rows, 999_999, 0)
    return str(path)
