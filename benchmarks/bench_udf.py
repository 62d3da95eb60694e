"""Numeric UDFs on the GPU against their peers, same data, one process.

    python3 benchmarks/bench_udf.py [--sizes 1e7 1e8 1e9] [--runs 10]

UDFs: ``x * 2 + 1`` and the published cuDF applymap benchmark's membership test (the values 1027,
1000, 59, 980 written out five times), on float64 and int64 columns. Peers: the same expression in
CuPy (``x * 2 + 1``; ``cupy.isin``), PyArrow compute on the CPU (``multiply`` + ``add``; ``is_in``),
and pandas ``Series.apply``, measured at 10^7 rows only and extrapolated linearly above (said in the
output). GPU timings are CUDA-event medians after a warm-up; GB/s counts bytes read + written
(input, output data, output bits for bool results) and is compared with a device-to-device copy
of the input (``cudaMemcpyAsync``, bytes read + written) measured in the same run. "replayed": the
same call recorded once with ``ad.cuda.capture()`` and replayed (``graph.replay()``: one graph launch,
no per-call Python), timed the same way.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import arrowdev as ad
import record

VALUES = [1027, 1000, 59, 980] * 5


def times2plus1(x):
    return x * 2 + 1


def member(x):
    return x in [1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980,
                 1027, 1000, 59, 980, 1027, 1000, 59, 980]


def gpu_median(cp, fn, runs: int) -> float:
    """Median CUDA-event time of ``fn`` on arrowdev's stream, which is also CuPy's current stream
    here, so arrowdev's kernels and CuPy's run (and are timed) on the same stream."""
    stream = ad.cuda.runtime.stream_for(0)
    with stream:
        fn()
        cp.cuda.runtime.deviceSynchronize()
        samples = []
        for _ in range(runs):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            out = fn()
            end.record(stream)
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
            del out
    return statistics.median(samples)


def cpu_median(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e7, 1e8, 1e9])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pandas-rows", type=int, default=10**7)
    record.add_json_option(parser, "bench_udf")
    args = parser.parse_args()
    machine = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"device: {machine}")
    recorded = []
    stream = ad.cuda.runtime.stream_for(0)
    pandas_seconds = {}
    import pandas as pd

    for dtype in ("float64", "int64"):
        host = (np.arange(args.pandas_rows) % 2000).astype(dtype)
        series = pd.Series(host)
        for name, f in (("x*2+1", times2plus1), ("in list", member)):
            start = time.perf_counter()
            series.apply(f)
            pandas_seconds[(dtype, name)] = (time.perf_counter() - start) / args.pandas_rows
    print(f"pandas Series.apply measured at {args.pandas_rows:.0e} rows; larger sizes are extrapolated linearly")
    header = (f"{'dtype':8s} {'udf':8s} {'rows':>6s} {'arrowdev ms':>11s} {'GB/s':>7s} {'of copy':>7s} "
              f"{'replayed':>8s} {'of copy':>7s} {'cupy ms':>8s} {'pyarrow ms':>10s} {'pandas ms':>10s} {'x cupy':>7s} "
              f"{'x pyarrow':>9s} {'x pandas':>9s}")
    print(header)
    for rows in (int(s) for s in args.sizes):
        for dtype in ("float64", "int64"):
            with cp.cuda.Device(0), stream:
                data = (cp.arange(rows, dtype=cp.int64) % 2000).astype(dtype)
            stream.synchronize()
            gcol = ad.column(data)  # zero-copy from CuPy
            target = cp.empty_like(data)
            copy_s = gpu_median(cp, lambda: cp.cuda.runtime.memcpyAsync(
                target.data.ptr, data.data.ptr, data.nbytes, cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr), args.runs)
            copy_bw = 2 * data.nbytes / copy_s
            host_arr = pa.array(data.get()) if rows <= 10**8 else None
            for name, f in (("x*2+1", times2plus1), ("in list", member)):
                first = time.perf_counter()
                out = gcol.apply(f)
                cp.cuda.runtime.deviceSynchronize()
                first = time.perf_counter() - first
                mine = gpu_median(cp, lambda: gcol.apply(f), args.runs)
                with ad.cuda.capture() as graph:  # the same call recorded as a CUDA graph, replayed
                    captured = gcol.apply(f)
                replayed = gpu_median(cp, graph.replay, args.runs)
                if name == "x*2+1":
                    peer = gpu_median(cp, lambda: data * 2 + 1, args.runs)
                    written = data.nbytes
                    arrow_fn = (lambda: pc.add(pc.multiply(host_arr, 2), 1)) if host_arr is not None else None
                else:
                    values = cp.asarray(VALUES, dtype=dtype)
                    peer = gpu_median(cp, lambda: cp.isin(data, values), args.runs)
                    written = rows // 8
                    value_set = pa.array(VALUES, type=pa.from_numpy_dtype(np.dtype(dtype)))
                    arrow_fn = (lambda: pc.is_in(host_arr, value_set=value_set)) if host_arr is not None else None
                check = out.to_cupy() if name == "x*2+1" else None
                if check is not None:
                    assert bool(cp.all(check == data * 2 + 1))
                    assert bool(cp.all(captured.to_cupy() == check))
                pyarrow_s = cpu_median(arrow_fn, 3) if arrow_fn else float("nan")
                pandas_s = pandas_seconds[(dtype, name)] * rows
                bandwidth = (data.nbytes + written) / mine
                replayed_bw = (data.nbytes + written) / replayed
                print(f"{dtype:8s} {name:8s} {rows:6.0e} {mine * 1e3:11.2f} {bandwidth / 1e9:7.0f} "
                      f"{bandwidth / copy_bw:7.2f} {replayed * 1e3:8.3f} {replayed_bw / copy_bw:7.2f} "
                      f"{peer * 1e3:8.2f} {pyarrow_s * 1e3:10.1f} {pandas_s * 1e3:10.0f} "
                      f"{peer / mine:7.2f} {pyarrow_s / mine:9.1f} {pandas_s / mine:9.0f}"
                      f"   (first call incl. compile {first:.2f} s; copy {copy_bw / 1e9:.0f} GB/s)")
                recorded.append({"dtype": dtype, "udf": name, "rows": rows, "arrowdev_ms": mine * 1e3,
                                 "gb_per_s": bandwidth / 1e9, "copy_gb_per_s": copy_bw / 1e9, "cupy_ms": peer * 1e3,
                                 "replayed_ms": replayed * 1e3, "replayed_gb_per_s": replayed_bw / 1e9,
                                 "pyarrow_ms": pyarrow_s * 1e3 if arrow_fn else None,
                                 "pandas_ms": pandas_s * 1e3, "first_call_s": first})
                del out, check, captured, graph
            del data, gcol, target
    record.write(args.json, "bench_udf", machine, recorded, pandas_rows=args.pandas_rows)


if __name__ == "__main__":
    main()
