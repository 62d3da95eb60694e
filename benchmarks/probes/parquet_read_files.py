"""Probe (GPU, one process): libcudf's Parquet read of bench_scale's files, one, two and four files in one read,
milliseconds per 25 million rows (synchronised, medians after a warm-up). Whether a partition of several files
reads faster per row than one of one file, and what the host's reading threads change (KvikIO's
``KVIKIO_NTHREADS``, read when the process starts: run the probe once per setting).

    KVIKIO_NTHREADS=8 bash .gpu-wheels/run.sh python3 benchmarks/probes/parquet_read_files.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scale_data  # noqa: E402
import scale_job  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=25_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import cupy as cp
    import pylibcudf as plc

    files = 4
    folder = Path(tempfile.gettempdir()) / f"arrowdev-probe-files-{args.rows_per_file}x{files}"
    paths = scale_data.ensure(folder, args.rows_per_file * files, files)
    sync = cp.cuda.Device().synchronize
    print(f"KVIKIO_NTHREADS={os.environ.get('KVIKIO_NTHREADS', '(unset)')}, "
          f"LIBCUDF_CUFILE_POLICY={os.environ.get('LIBCUDF_CUFILE_POLICY', '(unset)')}", flush=True)

    def read(sources: list[str]) -> object:
        builder = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo(sources))
        builder = builder.column_names(scale_job.COLUMNS) if hasattr(builder, "column_names") else \
            builder.columns(scale_job.COLUMNS)
        return plc.io.parquet.read_parquet(builder.build())

    for k in (1, 2, 4):
        times = []
        for i in range(args.repeats + 1):
            sync()
            t0 = time.perf_counter()
            got = read(paths[:k])
            sync()
            if i:
                times.append(time.perf_counter() - t0)
            del got
        ms = 1e3 * statistics.median(times)
        gb = sum(os.path.getsize(p) for p in paths[:k]) / 1e9
        print(f"  {k} file(s) in one read: {ms:8.1f} ms, {ms / k:7.1f} ms per file of "
              f"{args.rows_per_file:,} rows, {gb / ms * 1e3:5.1f} GB/s of Parquet", flush=True)


if __name__ == "__main__":
    main()
