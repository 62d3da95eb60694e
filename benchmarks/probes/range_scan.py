"""Probe (GPU): what the running sum of one range's string sizes costs, the way a pipelined range takes it
(``string_sink.Pipeline.step``: ``cp.cumsum`` over every second int64 of the kernel's (address, size) pairs, into
the range's offsets) and the ways it could: the sizes copied to a contiguous array first (CuPy's CUB scan takes
only contiguous input), and the scan over contiguous sizes alone. CUDA events around each on arrowdev's stream,
medians of ``--runs`` after a warm-up; rows per range as a 10^8-row call of upper runs them (docs/strings.md,
"Speed").

    bash .gpu-wheels/run.sh python3 benchmarks/probes/range_scan.py [--rows 3700000] [--runs 50]
"""

from __future__ import annotations

import argparse
import os
import statistics


def timed(cp, stream, call, runs: int) -> float:
    """Median milliseconds of ``call()`` on ``stream`` by CUDA events, after two warm-up calls."""
    for _ in range(2):
        call()
    samples = []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        call()
        end.record(stream)
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_700_000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    import cupy as cp

    from cupy._core import _accelerator

    b = args.rows
    stream = cp.cuda.Stream(non_blocking=True)
    print(f"CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS')!r}; CuPy's routine accelerators "
          f"{_accelerator.get_routine_accelerators()}, reduction accelerators {_accelerator.get_reduction_accelerators()}")
    with stream:
        pairs = cp.zeros(2 * b, dtype=cp.int64)
        pairs[1::2] = cp.random.randint(0, 30, b)
        batch = cp.zeros(b + 1, dtype=cp.int64)
        sizes = cp.empty(b, dtype=cp.int64)
        want = cp.cumsum(pairs[1::2])
        cases = {
            "cumsum over the pairs' sizes (strided, today)": lambda: cp.cumsum(pairs[1:2 * b:2], out=batch[1:b + 1]),
            "sizes copied, then cumsum (contiguous)": lambda: (cp.copyto(sizes, pairs[1:2 * b:2]),
                                                               cp.cumsum(sizes, out=batch[1:b + 1])),
            "cumsum of contiguous sizes alone": lambda: cp.cumsum(sizes, out=batch[1:b + 1]),
        }
        for name, call in cases.items():
            ms = timed(cp, stream, call, args.runs)
            right = bool((batch[1:] == want).all())
            print(f"{name:50s} {ms * 1e3:8.1f} us  right: {right}")


if __name__ == "__main__":
    main()
