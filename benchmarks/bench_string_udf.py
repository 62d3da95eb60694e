"""String UDFs on the GPU against (a) the same UDF allocating each new string with NRT's device malloc (the
cuDF design), (b) PyArrow compute on the CPU and (c) where cuDF is importable, libcudf's own string kernels
(``Series.str`` methods and operators) and cuDF's ``Series.apply`` for the read-only UDFs, same data, one
process; (d) bytes per second against the device copy bandwidth measured in the same run.

    python3 benchmarks/bench_string_udf.py [--rows 10000000] [--runs 10]

10 M strings of about 20 bytes, some non-ASCII, as a ``string`` column. New-string UDFs: ``s.upper()``
(``utf8_upper``), ``s + "abc"`` (``binary_join_element_wise``), ``s.replace("a", "bb")``
(``replace_substring``) and the issue's UDF (upper when longer than 2 characters, else doubled, then
``+ "abc"``; PyArrow: ``if_else`` over the same kernels). Read-only UDFs: ``len(s)``, ``startswith``,
``count``. Every arrowdev output is checked against Python's ``str`` (PyArrow's case mapping is Unicode's
simple one: ``utf8_upper("ß")`` stays ``"ß"`` where Python gives ``"SS"``). GPU times are CUDA-event medians after a
warm-up (the first call, which compiles, is reported apart) of the whole ``apply``: kernel, arena size read,
offsets scan, gather, output assembly. The device-malloc peer is the same compiled kernel with the arena
switched to one ``NRT_MemInfo_alloc`` per string (NRT frees each when its count reaches zero, as cuDF's
strings are freed); its output bytes are therefore not valid and not checked, and it is timed over 3 runs.
GB/s counts input bytes and offsets read plus output bytes and offsets written; the copy bandwidth is a
device-to-device copy's (bytes read + written per second).

cuDF runs on its own stream, so against it both sides are timed the same way: wall-clock medians of the call
followed by a device synchronisation (``wall ms``). The seed UDF's libcudf peer is the chain
``(s.str.upper() where s.str.len() > 2 else s + s) + "abc"``. cuDF's ``Series.apply`` is tried only on the
read-only UDFs: on the GPU machine its new-string UDFs failed with an illegal memory access, which would end
the process's CUDA context.
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
from arrowdev.udf.run import string_results as results

UNIQUE = 10_000  # make_strings repeats this many distinct strings
WORDS = ["alpha", "ab", "café", "日本", "🎉", "xyz", "abcab", "naïve", "grüße", "b"]


def make_strings(rows: int) -> pa.Array:
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(WORDS), size=(UNIQUE, 4))
    base = [" ".join(WORDS[i] for i in row) for row in picks]  # about 20 bytes each
    return pa.array(base * (rows // UNIQUE + 1))[:rows]


def issue_udf(s):
    if len(s) > 2:
        r = s.upper()
    else:
        r = s + s
    return r + "abc"


def issue_arrow(a):
    long = pc.greater(pc.utf8_length(a), 2)
    return pc.binary_join_element_wise(pc.if_else(long, pc.utf8_upper(a), pc.binary_join_element_wise(a, a, "")),
                                       "abc", "")


NEW_STRINGS = [
    ("s.upper()", lambda s: s.upper(), pc.utf8_upper),
    ('s + "abc"', lambda s: s + "abc", lambda a: pc.binary_join_element_wise(a, "abc", "")),
    ('s.replace("a", "bb")', lambda s: s.replace("a", "bb"), lambda a: pc.replace_substring(a, "a", "bb")),
    ("seed UDF", issue_udf, issue_arrow),
]
READ_ONLY = [
    ("len(s)", lambda s: len(s), pc.utf8_length),
    ('s.startswith("ab")', lambda s: s.startswith("ab"), lambda a: pc.starts_with(a, "ab")),
    ('s.count("ab")', lambda s: s.count("ab"), lambda a: pc.count_substring(a, "ab")),
]


def issue_cudf(sr):
    return sr.str.upper().where(sr.str.len() > 2, sr + sr) + "abc"


CUDF_PEERS = {  # libcudf's kernel for the same job, on a cudf.Series of the same strings
    "s.upper()": lambda sr: sr.str.upper(),
    's + "abc"': lambda sr: sr + "abc",
    's.replace("a", "bb")': lambda sr: sr.str.replace("a", "bb"),
    "seed UDF": issue_cudf,
    "len(s)": lambda sr: sr.str.len(),
    's.startswith("ab")': lambda sr: sr.str.startswith("ab"),
    's.count("ab")': lambda sr: sr.str.count("ab"),
}


def cudf_series(host: pa.Array):
    """A cudf.Series of ``host``, or None where cuDF cannot be imported."""
    try:
        import cudf
    except Exception as e:  # noqa: BLE001 - any import failure means: no cuDF peer
        print(f"cuDF peer skipped: {type(e).__name__}: {e}")
        return None
    return cudf.Series.from_arrow(host)


def wall_median(cp, fn, runs: int) -> float:
    """Median wall time of ``fn()`` followed by a device synchronisation (after one warm-up call)."""
    fn()
    cp.cuda.runtime.deviceSynchronize()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        cp.cuda.runtime.deviceSynchronize()
        samples.append(time.perf_counter() - start)
        del result
    return statistics.median(samples)


def gpu_median(cp, stream, fn, runs: int) -> float:
    samples = []
    with stream:
        for _ in range(runs):
            begin, end = cp.cuda.Event(), cp.cuda.Event()
            begin.record(stream)
            result = fn()
            end.record(stream)
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(begin, end) / 1e3)
            del result
    return statistics.median(samples)


def copy_bandwidth(cp, nbytes: int) -> float:
    """Bytes read + written per second by a device-to-device copy of ``nbytes``."""
    src, dst = cp.empty(nbytes, dtype=cp.uint8), cp.empty(nbytes, dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    seconds = gpu_median(cp, stream, lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                                                       cp.cuda.runtime.memcpyDeviceToDevice,
                                                                       stream.ptr), 20)
    return 2 * nbytes / seconds


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=10)
    record.add_json_option(parser, "bench_string_udf")
    args = parser.parse_args()
    recorded = []
    cp.cuda.runtime.deviceSetLimit(0x02, 8 << 30)  # cudaLimitMallocHeapSize, before any kernel uses malloc
    host = make_strings(args.rows)
    in_bytes = host.buffers()[2].size + host.buffers()[1].size
    gcol = ad.column(host).to_device()
    stream = ad.cuda.runtime.stream_for(0)
    bandwidth = copy_bandwidth(cp, 1 << 30)
    print(f"{len(host):,} strings, {host.buffers()[2].size / len(host):.1f} bytes each on average; "
          f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; "
          f"device copy {bandwidth / 1e9:.0f} GB/s (read + write)")
    series = cudf_series(host)
    print(f"{'udf':22s} {'arrowdev ms':>11s} {'GB/s':>6s} {'of copy':>7s} {'malloc ms':>9s} {'vs malloc':>9s} "
          f"{'pyarrow ms':>10s} {'vs pyarrow':>10s} {'first s':>7s} {'wall ms':>7s} {'libcudf':>7s} "
          f"{'vs cudf':>7s} {'apply':>7s}")
    for name, udf, arrow in NEW_STRINGS + READ_ONLY:
        start = time.perf_counter()
        out = gcol.apply(udf)
        cp.cuda.runtime.deviceSynchronize()
        first = time.perf_counter() - start
        got = out.to_pyarrow().combine_chunks()
        distinct = host[:UNIQUE].to_pylist()  # the data repeats these, so they cover every row
        assert got[:UNIQUE].to_pylist() == [udf(v) for v in distinct], f"{name}: output differs from Python's str"
        last_block = (len(got) // UNIQUE - 1) * UNIQUE
        assert got.slice(last_block, UNIQUE).to_pylist() == got[:UNIQUE].to_pylist()
        out_bytes = sum(b.size for b in got.buffers()[1:] if b is not None) if got.type == pa.string() else 0
        mine = gpu_median(cp, stream, lambda: gcol.apply(udf), args.runs)
        cpu = statistics.median([_timed(lambda: arrow(host)) for _ in range(3)])
        malloc_cell = vs_cell = ""
        if got.type == pa.string():
            results.device_malloc_for_benchmarks = True
            try:
                gcol.apply(udf)  # warm-up of the same kernel with device malloc
                peer = gpu_median(cp, stream, lambda: gcol.apply(udf), 3)
            finally:
                results.device_malloc_for_benchmarks = False
            malloc_cell, vs_cell = f"{peer * 1e3:9.1f}", f"{peer / mine:8.0f}x"
        rate = (in_bytes + out_bytes) / mine
        wall = wall_median(cp, lambda: gcol.apply(udf), args.runs)
        libcudf = apply_ms = None
        if series is not None:
            libcudf = wall_median(cp, lambda: CUDF_PEERS[name](series), args.runs)
            if (name, udf, arrow) in READ_ONLY:
                apply_ms = _cudf_apply(cp, series, udf, args.runs)
        cudf_cells = (f"{libcudf * 1e3:7.2f} {libcudf / wall:6.2f}x {apply_ms or float('nan'):7.2f}"
                      if libcudf else "")
        print(f"{name:22s} {mine * 1e3:11.2f} {rate / 1e9:6.0f} {rate / bandwidth:7.2f} {malloc_cell:>9s} "
              f"{vs_cell:>9s} {cpu * 1e3:10.1f} {cpu / mine:9.0f}x {first:7.2f} {wall * 1e3:7.2f} {cudf_cells}",
              flush=True)
        recorded.append({"udf": name, "arrowdev_ms": mine * 1e3, "gb_per_s": rate / 1e9,
                         "of_copy": rate / bandwidth, "device_malloc_ms": peer * 1e3 if malloc_cell else None,
                         "pyarrow_ms": cpu * 1e3, "first_call_s": first, "arrowdev_wall_ms": wall * 1e3,
                         "libcudf_wall_ms": libcudf * 1e3 if libcudf else None,
                         "cudf_apply_wall_ms": apply_ms})
        del out, got
    machine = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    record.write(args.json, "bench_string_udf", machine, recorded, strings=len(host),
                 copy_gb_per_s=bandwidth / 1e9)


def _cudf_apply(cp, series, udf, runs: int) -> float | None:
    """Milliseconds of cuDF's ``Series.apply(udf)`` (wall, synchronised), or None where it fails."""
    try:
        return wall_median(cp, lambda: series.apply(udf), runs) * 1e3
    except Exception as e:  # noqa: BLE001 - reported, the benchmark goes on
        print(f"  cuDF Series.apply failed: {type(e).__name__}: {str(e)[:200]}")
        return None


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
