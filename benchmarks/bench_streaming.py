"""A UDF on the GPU over a host table larger than the GPU: ``tbl.apply(f, device="cuda")`` streams it through
in ranges of rows (arrowdev/streaming.py), against the two things that bound it, measured in the same run.

    python3 benchmarks/bench_streaming.py [--times-gpu 1.5] [--runs 2] [--check 1000] [--json [PATH]]

The table: two float64 columns in pageable host memory (NumPy), together ``--times-gpu`` times the GPU's
memory; the UDF ``a > b`` (a bool column: a sixty-fourth of the input comes back, so the host holds the input
and little more). Reported, in GB/s of input:

- ``link``: ``to_device`` of 4 GiB of pageable host memory (through arrowdev's pinned staging: the path a
  streamed range takes), the faster of a slice of one column and of both columns as a table, medians of 3;
- ``kernel``: the UDF over 4 GiB of input already on the GPU, median of 5 after a warm-up;
- ``streamed``: the whole call, median of ``--runs``; its peak device memory (arrowdev's accounting) and the
  process's peak resident host memory.

Goal (docs/udf.md, "Data larger than the GPU"): streamed >= 0.8 x min(link, kernel). The result is checked at
``--check`` sampled rows against NumPy.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np
import pyarrow as pa

import arrowdev as ad
import record


def make_column(rows: int, phase: float) -> np.ndarray:
    """``rows`` float64 values in pageable memory: a ramp of 4096 values repeated, written by a thread a core
    (first touches of fresh pages bound it; the random generator would take minutes at 10^10 values)."""
    from concurrent.futures import ThreadPoolExecutor

    values = np.empty(rows, dtype=np.float64)
    ramp = (np.arange(4096) * 0.618 + phase) % 1.0
    blocks = rows // 4096
    values[blocks * 4096:] = ramp[:rows - blocks * 4096]
    grid = values[:blocks * 4096].reshape(-1, 4096)
    step = max(1, -(-blocks // (4 * (os.cpu_count() or 1))))

    def fill(start: int) -> None:
        grid[start:start + step] = ramp
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(fill, range(0, blocks, step)))
    return values


def synchronized(f, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    import cupy

    t0 = time.perf_counter()
    out = f(*args, **kwargs)
    cupy.cuda.Device().synchronize()
    return out, time.perf_counter() - t0


def link_gbs(a: np.ndarray, b: np.ndarray) -> float:
    """The faster of ``to_device`` of 4 GiB of one column and of 2 GiB of each column as a table (one batch of
    copies: the staging threads pipeline across the columns)."""
    n = min(len(a), (4 << 30) // 8)
    col = ad.column(pa.array(a[:n], type=pa.float64()))
    pair = ad.table({"a": pa.array(a[:n // 2]), "b": pa.array(b[:n // 2])})
    return max(n * 8 / statistics.median([synchronized(x.to_device)[1] for _ in range(3)]) / 1e9 for x in (col, pair))


def kernel_gbs(a: np.ndarray, b: np.ndarray, f) -> float:  # noqa: ANN001
    n = min(len(a), (2 << 30) // 8)  # 2 GiB a column: 4 GiB of input
    tbl = ad.table({"a": pa.array(a[:n]), "b": pa.array(b[:n])}).to_device()
    tbl.apply(f, columns=["a", "b"])  # compile
    times = [synchronized(tbl.apply, f, columns=["a", "b"])[1] for _ in range(5)]
    return 2 * n * 8 / statistics.median(times) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times-gpu", type=float, default=1.5, help="the table's size over the GPU's memory")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--check", type=int, default=1000)
    record.add_json_option(parser, "bench_streaming")
    args = parser.parse_args()
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    machine, gpu_bytes = props["name"].decode(), int(props["totalGlobalMem"])
    rows = int(args.times_gpu * gpu_bytes / 16)
    t0 = time.perf_counter()
    a, b = make_column(rows, 0.0), make_column(rows, 0.31)
    print(f"{machine}: {gpu_bytes / 1e9:.1f} GB; host table {2 * rows * 8 / 1e9:.1f} GB ({args.times_gpu}x the GPU), "
          f"{rows} rows of two float64 columns, made in {time.perf_counter() - t0:.1f} s")
    f = lambda a, b: a > b  # noqa: E731
    link, kernel = link_gbs(a, b), kernel_gbs(a, b, f)
    print(f"link (to_device of 4 GiB, pageable, the faster of one column and two): {link:.1f} GB/s; kernel alone (4 GiB on the GPU): {kernel:.1f} GB/s")
    tbl = ad.table({"a": pa.array(a), "b": pa.array(b)})  # zero-copy over the NumPy arrays
    times, peaks = [], []
    out = None
    for _ in range(args.runs):
        out = None
        ad.cuda.reset_peak()
        before = ad.cuda.memory_stats()["bytes_in_use"]
        out, seconds = synchronized(tbl.apply, f, columns=["a", "b"], device="cuda")
        times.append(seconds)
        peaks.append(ad.cuda.memory_stats()["peak_bytes"] - before)
    streamed = 2 * rows * 8 / statistics.median(times) / 1e9
    host_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ratio = streamed / min(link, kernel)
    print(f"streamed: {statistics.median(times):.2f} s, {streamed:.1f} GB/s of input = {ratio:.2f} of the slower bound "
          f"(goal >= 0.8: {'met' if ratio >= 0.8 else 'not met'}); result on {out.device.type}, {out.num_chunks} "
          f"chunks; peak device memory {max(peaks) / 1e9:.2f} GB, peak host RSS {host_peak / 1e9:.1f} GB")
    if args.check:
        picks = np.random.default_rng(5).integers(0, rows, args.check)
        got = out.to_pyarrow().take(pa.array(picks)).to_pylist()
        assert got == list(a[picks] > b[picks]), "the streamed result differs from NumPy's"
        print(f"{args.check} sampled rows equal NumPy's")
    record.write(args.json, "bench_streaming", machine, [{
        "rows": rows, "table_bytes": 2 * rows * 8, "gpu_bytes": gpu_bytes, "link_gbs": link, "kernel_gbs": kernel,
        "streamed_gbs": streamed, "streamed_s": statistics.median(times), "ratio": ratio,
        "peak_device_bytes": max(peaks), "peak_host_rss_bytes": host_peak, "chunks": out.num_chunks}])


if __name__ == "__main__":
    main()
