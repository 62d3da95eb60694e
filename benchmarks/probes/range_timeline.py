"""Probe (GPU, not a benchmark against a peer): the timeline of one string UDF call over many ranges of rows
(docs/strings.md, "Speed"): which kernels ran, how long each kind took on the GPU (CUDA events around every
launch arrowdev makes), how long the GPU spent between them (CuPy's scans and small kernels, and any wait
for the host), and whether the host or the GPU set the pace: per launch, the GPU's start minus the host's
submission, both counted from the first launch ("lead"). A lead near 0 all along: the GPU waited on the
host; a growing lead: the host was ahead and the GPU bound the call.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/range_timeline.py [--rows 1e8] [--udfs upper concat]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arrowdev as ad  # noqa: E402
from bench_udf_memory import UDFS, make_strings, route_cupy_through_arrowdev  # noqa: E402


def _kernel_name(kernel) -> str:
    py_func = getattr(kernel, "py_func", None)
    return getattr(py_func, "__name__", None) or type(kernel).__name__


def instrument(cp):
    """Wraps ``Memory.launch`` with an event before and after each launch, and times the output's growth on the
    host; returns (records, growth times, undo)."""
    from arrowdev.udf.run import buffers

    records: list[tuple[str, float, object, object]] = []
    original = buffers.Memory.launch

    def launch(self, kernel, n, args, rows_per_thread=1):
        before, after = cp.cuda.Event(), cp.cuda.Event()
        before.record(self.stream)
        host = time.perf_counter()
        original(self, kernel, n, args, rows_per_thread)
        after.record(self.stream)
        records.append((_kernel_name(kernel), host, before, after))

    from arrowdev.gpu import growable

    grown: list[float] = []
    original_grow = growable.GrowableBuffer.grow_to

    def grow_to(self, nbytes):
        t0 = time.perf_counter()
        original_grow(self, nbytes)
        grown.append(time.perf_counter() - t0)

    buffers.Memory.launch = launch
    growable.GrowableBuffer.grow_to = grow_to

    def undo():
        buffers.Memory.launch = original
        growable.GrowableBuffer.grow_to = original_grow

    return records, grown, undo


def timeline(cp, col, f) -> dict[str, float]:
    records, grown, undo = instrument(cp)
    try:
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        out = col.apply(f)
        submitted = time.perf_counter() - t0
        cp.cuda.runtime.deviceSynchronize()
        wall = time.perf_counter() - t0
    finally:
        undo()
    del out
    first_gpu, first_host = records[0][2], records[0][1]
    by_kind: dict[str, list[float]] = {}
    between, leads = 0.0, []
    for i, (name, host, before, after) in enumerate(records):
        by_kind.setdefault(name, []).append(cp.cuda.get_elapsed_time(before, after))
        if i:
            between += cp.cuda.get_elapsed_time(records[i - 1][3], before)
        leads.append(cp.cuda.get_elapsed_time(first_gpu, before) - (host - first_host) * 1e3)
    span = cp.cuda.get_elapsed_time(first_gpu, records[-1][3])
    print(f"  wall {wall * 1e3:.2f} ms (host returned after {submitted * 1e3:.2f}); GPU span of the launches "
          f"{span:.2f} ms, {len(records)} launches")
    for name, times in by_kind.items():
        print(f"    {name:28s} x{len(times):4d}  sum {sum(times):8.2f} ms  median {statistics.median(times):7.3f} ms")
    print(f"    {'between launches':28s}        sum {between:8.2f} ms")
    print(f"    host time growing the output: {len(grown)} calls, {sum(grown) * 1e3:.2f} ms")
    quarter = max(len(leads) // 4, 1)
    print("  lead of the GPU over the host (ms), at launches 0, n/4, n/2, 3n/4, last: "
          + ", ".join(f"{leads[min(i, len(leads) - 1)]:.2f}" for i in (0, quarter, 2 * quarter, 3 * quarter,
                                                                          len(leads) - 1)))
    return {"wall_ms": wall * 1e3, "span_ms": span, "between_ms": between}


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--udfs", nargs="+", default=["upper", "concat", "replace", "chain"])
    parser.add_argument("--accounted", action="store_true", help="route CuPy through arrowdev's pool (as "
                        "bench_udf_memory.py does)")
    args = parser.parse_args()
    if args.accounted:
        route_cupy_through_arrowdev()
    col = ad.column(make_strings(int(args.rows))).to_device()
    print(f"{int(args.rows):,} strings on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}"
          f"{' (CuPy through the accounted pool)' if args.accounted else ''}")
    for name in args.udfs:
        f = UDFS[name]
        for _ in range(2):  # compile, then a call that learns what a row takes
            col.apply(f)
        cp.cuda.runtime.deviceSynchronize()
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            col.apply(f)
            cp.cuda.runtime.deviceSynchronize()
            times.append(time.perf_counter() - t0)
        print(f"{name}: median wall of 5 calls {statistics.median(times) * 1e3:.2f} ms")
        timeline(cp, col, f)


if __name__ == "__main__":
    main()
