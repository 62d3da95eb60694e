"""Peak device memory of one UDF call against the output it makes, for arrowdev and libcudf, same data, one
process, and the time of each.

    python3 benchmarks/bench_udf_memory.py [--rows 1e8] [--runs 3] [--json]

The column: ``--rows`` strings ``"ab1" + a number`` (4 to 13 bytes, as docs/strings.md's memory table), in
one chunk on the GPU. Per UDF (``s.upper()``, ``s + "!"``, ``s.replace("1", "<>")``, the chain
``s.upper().replace("AB", "<>") + "!"``, ``len(s)``, the seed design's UDF and a null-aware numeric UDF): arrowdev's peak is
``ad.cuda.memory_stats()["peak_bytes"]`` during the call minus the bytes in use before it, with CuPy's own
allocations routed through arrowdev's accounted buffers for the whole run (so CuPy temporaries count too), and
the GPU's own view (``cudaMemGetInfo``) as a check: ``device peak`` is the most the driver reported in use
above the start, sampled after the call (a lower bound of the true peak). libcudf's peak (where cuDF is
importable) is RMM's ``StatisticsResourceAdaptor`` over the current resource during the same operation done
by libcudf's own kernels (``str.upper()``, ``+``, ``str.replace``, the three calls, ``str.len()``).
Output bytes are the result's buffers (``ArrowColumn.nbytes``; cuDF: ``memory_usage()``). The bound arrowdev
keeps (docs/udf.md): peak <= 1.25 x output + 256 MiB.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import arrowdev as ad
import record

BOUND_FIXED = 256 << 20
UDFS: dict[str, Callable[..., Any]] = {
    "upper": lambda s: s.upper(),
    "concat": lambda s: s + "!",
    "replace": lambda s: s.replace("1", "<>"),
    "chain": lambda s: s.upper().replace("AB", "<>") + "!",
    "len": lambda s: len(s),
    "seed": lambda s: (s.upper() if len(s) > 2 else s + s) + "abc",  # the seed design's UDF (bench_string_udf.py)
}


def make_strings(rows: int) -> pa.Array:
    """``"ab1"`` + a random number below 10^10 (4 to 13 bytes), made by PyArrow's kernels (fast at 10^9); a
    ``large_string`` column where the bytes may pass what int32 offsets address (above about 1.6 x 10^8 rows)."""
    kind = pa.large_string() if rows * 13 > (1 << 31) - 1 else pa.string()
    numbers = pa.array(np.random.default_rng(0).integers(0, 10**10, rows))
    return pc.binary_join_element_wise(pa.scalar("ab1", kind), pc.cast(numbers, kind), pa.scalar("", kind))


def route_cupy_through_arrowdev() -> None:
    """CuPy's allocations come from arrowdev's accounted buffers (they count in ``peak_bytes``)."""
    from arrowdev.gpu import memory

    import cupy

    cupy.cuda.set_allocator(memory.accounted_malloc)


def arrowdev_peak(col: Any, f: Callable[..., Any], runs: int, **options: Any) -> dict[str, Any]:
    """Peak above what was in use, output bytes and the median wall time of ``col.apply(f)``."""
    import cupy

    col[:1000].apply(f, **options)  # compile, outside the measurement
    col.apply(f, **options)  # and a whole call, as libcudf's warm-up is: the pool's first growth is not the UDF's
    peaks, times, device, out_bytes = [], [], [], 0
    for _ in range(runs):
        cupy.cuda.Device().synchronize()
        before = ad.cuda.memory_stats()["bytes_in_use"]
        free_before = cupy.cuda.runtime.memGetInfo()[0]
        ad.cuda.reset_peak()
        t0 = time.perf_counter()
        out = col.apply(f, **options)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
        peaks.append(ad.cuda.memory_stats()["peak_bytes"] - before)
        device.append(free_before - cupy.cuda.runtime.memGetInfo()[0])
        out_bytes = out.nbytes
        del out
    return {"peak": max(peaks), "device_after": max(device), "output": out_bytes, "ms": statistics.median(times) * 1e3}


CUDF_OPS: dict[str, Callable[[Any], Any]] = {
    "upper": lambda s: s.str.upper(),
    "concat": lambda s: s + "!",
    "replace": lambda s: s.str.replace("1", "<>"),
    "chain": lambda s: s.str.upper().str.replace("AB", "<>") + "!",
    "len": lambda s: s.str.len(),
    "seed": lambda s: s.str.upper().where(s.str.len() > 2, s + s) + "abc",
}


def cudf_peak(series: Any, name: str, runs: int) -> dict[str, Any] | None:
    """RMM's peak during libcudf's operation, its output bytes and median wall time; None without cuDF."""
    if series is None or name not in CUDF_OPS:
        return None
    import cupy
    import rmm

    upstream = rmm.mr.get_current_device_resource()
    peaks, times, out_bytes = [], [], 0
    CUDF_OPS[name](series)  # warm-up
    for _ in range(runs):
        stats = rmm.mr.StatisticsResourceAdaptor(upstream)
        rmm.mr.set_current_device_resource(stats)
        try:
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            out = CUDF_OPS[name](series)
            cupy.cuda.Device().synchronize()
            times.append(time.perf_counter() - t0)
            counts = stats.allocation_counts
            peaks.append(counts["peak_bytes"] if isinstance(counts, dict) else counts.peak_bytes)
            out_bytes = int(out.memory_usage())
            del out
        finally:
            rmm.mr.set_current_device_resource(upstream)
    return {"peak": max(peaks), "output": out_bytes, "ms": statistics.median(times) * 1e3}


PYARROW_OPS: dict[str, Callable[[Any], Any]] = {
    "upper": pc.utf8_upper,
    "concat": lambda a: pc.binary_join_element_wise(a, "!", ""),
    "replace": lambda a: pc.replace_substring(a, "1", "<>"),
    "chain": lambda a: pc.binary_join_element_wise(pc.replace_substring(pc.utf8_upper(a), "AB", "<>"), "!", ""),
    "seed": lambda a: pc.binary_join_element_wise(pc.if_else(pc.greater(pc.utf8_length(a), 2), pc.utf8_upper(a),
                                                             pc.binary_join_element_wise(a, a, "")), "abc", ""),
}


def check_samples(col: Any, f: Callable[..., Any], reference: Callable[[Any], Any], expected: dict[int, Any]) -> None:
    """The UDF's output at sampled windows of 64 rows across the whole column against PyArrow's kernels."""
    out = col.apply(f)
    for start, source in expected.items():
        got = out[int(start):int(start) + 64].to_pylist()
        if got != reference(source).to_pylist():
            raise AssertionError(f"rows {start}..{start + 64} differ from PyArrow's")
    print(f"    {len(expected)} windows of 64 rows across the column equal PyArrow's")


def cudf_series(host: pa.Array) -> Any:
    try:
        import cudf
    except ImportError:
        print("cuDF is not importable here: libcudf's columns are left empty")
        return None
    return cudf.Series.from_arrow(host)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--udfs", nargs="*", default=[*UDFS, "null-aware"])
    parser.add_argument("--no-peer", action="store_true", help="leave libcudf out (its copy of the column too)")
    parser.add_argument("--check", type=int, default=0, help="compare this many sampled rows with PyArrow")
    record.add_json_option(parser, "bench_udf_memory")
    args = parser.parse_args()
    rows = int(args.rows)
    host = make_strings(rows)
    series = None if args.no_peer else cudf_series(host)
    route_cupy_through_arrowdev()
    col = ad.column(host).to_device()
    samples = np.random.default_rng(3).integers(0, rows - 64, args.check) if args.check else []
    # as `string` (PyArrow's joins take one kind of string; a cast of a slice would check the whole column)
    expected = {i: pa.array(host.slice(int(i), 64).to_pylist(), pa.string()) for i in samples}
    del host
    print(f"{rows:.0e} strings, {col.nbytes / 1e9:.2f} GB on the GPU ({ad.cuda.memory_stats()['bytes_in_use'] / 1e9:.2f}"
          " GB in use)")
    print(f"{'udf':>10s} {'output GB':>9s} {'peak GB':>8s} {'peak/out':>8s} {'bound':>5s} {'dev GB':>6s} {'ms':>8s} "
          f"{'cudf peak':>9s} {'cudf/out':>8s} {'cudf ms':>8s} {'cudf/ad peak':>12s}")
    out_rows = []
    for name in args.udfs:
        if name == "null-aware":
            numbers = ad.column(pa.array(np.where(np.arange(rows) % 5 == 0, np.nan, np.arange(rows, dtype=np.float64)),
                                         from_pandas=True)).to_device()
            mine = arrowdev_peak(numbers, lambda x: -1.0 if x is ad.NA else x * 2, args.runs, null_aware=True)
            del numbers
        else:
            mine = arrowdev_peak(col, UDFS[name], args.runs)
            if args.check and name in PYARROW_OPS:
                check_samples(col, UDFS[name], PYARROW_OPS[name], expected)
        theirs = cudf_peak(series, name, args.runs)
        within = mine["peak"] <= 1.25 * mine["output"] + BOUND_FIXED
        cells = (f"{theirs['peak'] / 1e9:9.2f} {theirs['peak'] / theirs['output']:7.2f}x {theirs['ms']:8.1f} "
                 f"{theirs['peak'] / max(mine['peak'], 1):11.2f}x" if theirs else "")
        print(f"{name:>10s} {mine['output'] / 1e9:9.2f} {mine['peak'] / 1e9:8.2f} {mine['peak'] / mine['output']:7.2f}x "
              f"{'yes' if within else 'NO':>5s} {mine['device_after'] / 1e9:6.2f} {mine['ms']:8.1f} {cells}")
        out_rows.append({"udf": name, "rows": rows, "output_bytes": mine["output"], "peak_bytes": mine["peak"],
                         "ms": mine["ms"], "within_bound": within,
                         "libcudf_peak_bytes": theirs["peak"] if theirs else None,
                         "libcudf_output_bytes": theirs["output"] if theirs else None,
                         "libcudf_ms": theirs["ms"] if theirs else None})
    import cupy

    machine = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    record.write(args.json, "bench_udf_memory", machine, out_rows)


if __name__ == "__main__":
    main()
