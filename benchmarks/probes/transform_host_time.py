"""Probe (GPU): the host time of the scale job's transform (examples/scale_job.py: a numeric UDF, a UDF making
strings, a UDF reading two string columns, each appended) over a small partition already on the GPU, as
bench_scale.py's ``host_ms_transform`` measures it; each call alone (medians of many); the device
synchronisations each call makes; then a cProfile of many transforms written to ``$OUT/transform_profile.txt``.
The figures behind docs/distributed.md's host cost a task.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/transform_host_time.py [--rows 10000] [--calls 300]
"""
import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

import cupy as cp
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import scale_job  # noqa: E402

import arrowdev as ad  # noqa: E402


def median_us(fn, calls):
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def count_syncs(fn):
    """Device-to-host waits ``fn`` makes: stream and device synchronisations, event waits, CuPy ``get``s."""
    counts = {}
    patched = []

    def wrap(owner, name):
        original = getattr(owner, name)

        def counted(*a, **k):
            counts[name] = counts.get(name, 0) + 1
            return original(*a, **k)
        setattr(owner, name, counted)
        patched.append((owner, name, original))

    wrap(cp.cuda.Stream, "synchronize")
    wrap(cp.cuda.Event, "synchronize")
    wrap(cp.ndarray, "get")
    wrap(cp.cuda.runtime, "deviceSynchronize")
    wrap(cp.cuda.runtime, "streamSynchronize")
    wrap(cp.cuda.runtime, "eventSynchronize")
    try:
        fn()
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)
    return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    words = np.array(["alpha", "beta", "gamma", "delta", "Ahoy", "apple"])
    host = pa.table({"id": pa.array(np.arange(n)), "x": pa.array(rng.random(n)),
                     "s": pa.array(words[rng.integers(0, len(words), n)]),
                     "cat": pa.array(np.array(scale_job.CATEGORIES)[rng.integers(0, 20, n)])})
    t = ad.table(host).to_device()
    out = scale_job.transform(t)
    cp.cuda.runtime.deviceSynchronize()
    print(f"rows {n}; GPU {cp.cuda.runtime.getDeviceProperties(0)['name']}", flush=True)
    print(f"transform (3 calls + appends, no sync at the end): {median_us(lambda: scale_job.transform(t), args.calls):.1f} us")
    print(f"transform + device sync: "
          f"{median_us(lambda: (scale_job.transform(t), cp.cuda.runtime.deviceSynchronize()), args.calls):.1f} us")
    calls = {"number_udf": lambda: t.apply(scale_job.number_udf, columns=["x"]),
             "shout_udf": lambda: t.apply(scale_job.shout_udf, columns=["s"]),
             "hit_udf": lambda: out.apply(scale_job.hit_udf, columns=["shout", "cat"]),
             "append_column": lambda: t.append_column("y", out.column("y")),
             "number_udf column.apply": lambda: t.column("x").apply(scale_job.number_udf)}
    for name, fn in calls.items():
        alone = median_us(fn, args.calls)
        synced = median_us(lambda: (fn(), cp.cuda.runtime.deviceSynchronize()), args.calls)
        print(f"{name}: {alone:.1f} us (with a device sync after: {synced:.1f} us); waits {count_syncs(fn)}",
              flush=True)
    from dask.sizeof import sizeof

    import arrowdev.dask  # noqa: F401 - registers sizeof

    fresh = []

    def sized():
        made = scale_job.transform(t)
        t0 = time.perf_counter()
        sizeof(made)
        fresh.append(time.perf_counter() - t0)
    for _ in range(args.calls // 3):
        sized()
    print(f"sizeof of a fresh transform result: {1e6 * statistics.median(fresh):.1f} us; waits "
          f"{count_syncs(lambda: sizeof(scale_job.transform(t)))} (transform's and sizeof's)", flush=True)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(args.calls):
        scale_job.transform(t)
    pr.disable()
    path = os.path.join(os.environ.get("OUT", "/tmp"), "transform_profile.txt")
    with open(path, "w") as fh:
        pstats.Stats(pr, stream=fh).sort_stats("tottime").print_stats(60)
        pstats.Stats(pr, stream=fh).sort_stats("cumtime").print_stats(90)
    print("profile written to", path)


if __name__ == "__main__":
    main()
