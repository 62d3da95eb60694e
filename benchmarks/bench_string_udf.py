"""String UDFs that read strings and return numbers, on the GPU, against PyArrow compute on the CPU, same
data, one process.

    python3 benchmarks/bench_string_udf.py [--rows 10000000] [--runs 10]

10 M strings of about 20 bytes, some non-ASCII, as a ``string`` column. UDFs and their PyArrow equivalents:
``len(s)`` (``utf8_length``), ``s.startswith("ab")`` (``starts_with``), ``s.count("ab")``
(``count_substring``). GPU times are CUDA-event medians after a warm-up (the first call, which compiles, is
reported apart); GB/s counts the string bytes and offsets read. UDFs that make new strings, which the full
benchmark of the string-UDF issue measures, are not built yet.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import arrowdev as ad

WORDS = ["alpha", "ab", "café", "日本", "🎉", "xyz", "abcab", "naïve", "grüße", "b"]


def make_strings(rows: int) -> pa.Array:
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(WORDS), size=(rows // 1000 + 1, 4))
    base = [" ".join(WORDS[i] for i in row) for row in picks]  # about 20 bytes each
    return pa.array(base * 1000)[:rows]


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    host = make_strings(args.rows)
    data_bytes = host.buffers()[2].size + host.buffers()[1].size
    gcol = ad.column(host).to_device()
    stream = ad.cuda.runtime.stream_for(0)
    print(f"{len(host):,} strings, {host.buffers()[2].size / len(host):.1f} bytes each on average; "
          f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    cases = [("len(s)", lambda s: len(s), lambda a: pc.utf8_length(a)),
             ('s.startswith("ab")', lambda s: s.startswith("ab"), lambda a: pc.starts_with(a, "ab")),
             ('s.count("ab")', lambda s: s.count("ab"), lambda a: pc.count_substring(a, "ab"))]
    print(f"{'udf':20s} {'arrowdev ms':>11s} {'GB/s':>6s} {'pyarrow ms':>10s} {'speed-up':>8s} {'first call s':>12s}")
    for name, udf, arrow in cases:
        start = time.perf_counter()
        out = gcol.apply(udf)
        cp.cuda.runtime.deviceSynchronize()
        first = time.perf_counter() - start
        assert out.to_pylist()[:1000] == arrow(host[:1000]).to_pylist()
        samples = []
        with stream:
            for _ in range(args.runs):
                begin, end = cp.cuda.Event(), cp.cuda.Event()
                begin.record(stream)
                result = gcol.apply(udf)
                end.record(stream)
                end.synchronize()
                samples.append(cp.cuda.get_elapsed_time(begin, end) / 1e3)
                del result
        mine = statistics.median(samples)
        cpu = statistics.median([_timed(lambda: arrow(host)) for _ in range(3)])
        print(f"{name:20s} {mine * 1e3:11.2f} {data_bytes / mine / 1e9:6.0f} {cpu * 1e3:10.1f} {cpu / mine:8.0f}x"
              f" {first:12.2f}")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
