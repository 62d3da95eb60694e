"""The native check of received string offsets (issue 30; ``capsules/values.c``, ``values_offsets``) on 1 to 8
threads, right after a large copy has pushed the offsets out of the CPU's caches (as in a receive: the transport
copies the frames, then arrowdev checks them).

    python3 benchmarks/probes/offsets_check_threads.py [--offsets 10000000] [--copy-gib 1.0] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from arrowdev import _capsules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offsets", type=int, default=10_000_000)
    parser.add_argument("--copy-gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    offsets = np.cumsum(np.random.default_rng(0).integers(0, 16, args.offsets, dtype=np.int32), dtype=np.int32)
    high = int(offsets[-1])
    source = np.ones(int(args.copy_gib * (1 << 30)), dtype=np.uint8)
    target = np.empty_like(source)
    address, n = offsets.ctypes.data, len(offsets)
    print(f"{os.cpu_count()} CPUs; {n} int32 offsets ({offsets.nbytes / 1e6:.0f} MB) checked after a "
          f"{args.copy_gib} GiB copy each round; medians of {args.rounds}")
    for threads in (1, 2, 4, 8):
        times = []
        for _ in range(args.rounds):
            np.copyto(target, source)
            start = time.perf_counter()
            bad = _capsules.check_offsets(address, 4, n, 0, high, 4 << 20, threads)
            times.append(time.perf_counter() - start)
            assert bad == -1, bad
        took = statistics.median(times)
        print(f"  {threads} thread(s): {took * 1e3:.2f} ms, {offsets.nbytes / took / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
