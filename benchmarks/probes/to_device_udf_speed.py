"""Probe (GPU, one process): a UDF over a table copied with ``to_device`` from PyArrow against the same table read
by libcudf, at sizes around 5 * 10^7 rows (scale_partition.py found the transform of a 10^8-row table made by
``ad.table(pq.read_table(...)).to_device()`` 20-200x slower than of a 5 * 10^7-row one read by libcudf).

    bash .gpu-wheels/run.sh python3 benchmarks/probes/to_device_udf_speed.py [--rows 100000000]

Prints per table: its chunks, where the ``x`` column's data lives (CUDA's pointer attributes), and the median
milliseconds of the numeric UDF, the string UDF and CuPy's sum over ``x`` (each synchronised).
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
import scale_job  # noqa: E402

import arrowdev as ad  # noqa: E402


def ms(step: Callable[[], Any], sync: Callable[[], None], repeats: int = 5) -> float:
    times = []
    for i in range(repeats + 1):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        if i:
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[50_000_000, 100_000_000])
    args = parser.parse_args()
    import cupy as cp
    import pyarrow.parquet as pq

    sync = cp.cuda.Device().synchronize
    kinds = {0: "unregistered host", 1: "host", 2: "device", 3: "managed"}
    for rows in args.rows:
        path = scale_data.ensure(Path(tempfile.gettempdir()) / f"arrowdev-probe-{rows}", rows, 1)[0]
        host = pq.read_table(path, columns=scale_job.COLUMNS)
        made = {"to_device (chunks as read)": lambda: ad.table(host).to_device(),
                "to_device (one chunk)": lambda: ad.table(host.combine_chunks()).to_device()}
        try:
            import pylibcudf as plc

            def libcudf() -> Any:
                opts = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo([path]))
                opts = opts.column_names(scale_job.COLUMNS) if hasattr(opts, "column_names") else \
                    opts.columns(scale_job.COLUMNS)
                got = plc.io.parquet.read_parquet(opts.build())
                return ad.table({n: ad.column(c) for n, c in zip(scale_job.COLUMNS, got.columns)})

            made["libcudf read"] = libcudf
        except ImportError:
            pass
        for name, make in made.items():
            t = make()
            sync()
            x = t.column("x").chunks[0].to_cupy()
            attr = cp.cuda.runtime.pointerGetAttributes(x.data.ptr)
            print(f"{rows:,} rows, {name}: {len(t.column('x').chunks)} chunk(s) of x, device {t.device}, x's data in "
                  f"{kinds.get(attr.type, attr.type)} memory; free device memory "
                  f"{cp.cuda.runtime.memGetInfo()[0] / 1e9:.1f} GB", flush=True)
            print(f"    number_udf {ms(lambda: t.apply(scale_job.number_udf, columns=['x']), sync):9.2f} ms   "
                  f"shout_udf {ms(lambda: t.apply(scale_job.shout_udf, columns=['s']), sync):9.2f} ms   "
                  f"cupy sum of x {ms(lambda: [c.to_cupy().sum() for c in t.column('x').chunks], sync):7.2f} ms",
                  flush=True)
            del t, x


if __name__ == "__main__":
    main()
