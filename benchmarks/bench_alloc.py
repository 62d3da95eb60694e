"""Allocation + free of device arrays, 4 KiB .. 64 MiB: numba's own memory manager against arrowdev's
EMM plugin, and CuPy's pool, each in its own process (a numba memory manager is chosen per process).

    python3 benchmarks/bench_alloc.py [--runs 2000]

Each figure is the median over repeats of (allocate, free) pairs, in microseconds per pair, after a
warm-up. Goal: the plugin is not slower than numba's own allocator.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]

_WORKER = r"""
import json, statistics, sys, time, gc
which, runs = sys.argv[1], int(sys.argv[2])
sizes = json.loads(sys.argv[3])
gc.disable()
results = {}
if which == "cupy":
    import cupy as cp
    def pair(n):
        a = cp.empty(n, dtype=cp.uint8)
        del a
else:
    if which == "arrowdev":
        import arrowdev as ad
        ad.cuda.use_for_numba()
    from numba import cuda
    import numpy as np
    def pair(n):
        a = cuda.device_array(n, dtype=np.uint8)
        del a
for n in sizes:
    for _ in range(50):
        pair(n)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            pair(n)
        samples.append((time.perf_counter() - start) / runs * 1e6)
    results[n] = statistics.median(samples)
print(json.dumps(results))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    table = {}
    for which in ("numba", "arrowdev", "cupy"):
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CUDA_MEMORY_MANAGER"}
        out = subprocess.run([sys.executable, "-c", _WORKER, which, str(args.runs), json.dumps(SIZES)],
                             capture_output=True, text=True, env=env, check=True)
        table[which] = json.loads(out.stdout)
    print(f"{'size':>8s} {'numba us':>10s} {'arrowdev us':>12s} {'cupy us':>9s} {'numba/arrowdev':>15s}")
    for n in SIZES:
        key = str(n)
        mine, theirs, cupy = table["arrowdev"][key], table["numba"][key], table["cupy"][key]
        label = f"{n >> 10} KiB" if n < (1 << 20) else f"{n >> 20} MiB"
        print(f"{label:>8s} {theirs:10.2f} {mine:12.2f} {cupy:9.2f} {theirs / mine:15.2f}")
    print("numba/arrowdev > 1 means the plugin is faster than numba's own allocator")


if __name__ == "__main__":
    main()
