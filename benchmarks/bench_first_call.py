"""The first UDF call in a fresh process, with the kernel cache cold (compiled) and warm (read from disk).

    python3 benchmarks/bench_first_call.py [--device cpu|cuda] [--runs 3] [--json results.json]

Each measurement is a new Python process (``sys.executable``) with ``ARROWDEV_CACHE_DIR`` pointing at a
fresh folder (cold) or at the folder the cold run filled (warm). The process times, in order: ``import
arrowdev`` (and pyarrow), the first ``apply`` of each UDF below on a 1,000-row column (typing, compiling or
loading, launching) and a second ``apply`` of the same UDF (the in-process cache: what every later call
costs). It prints the medians over ``--runs`` pairs of processes and the cache's own counts (compilations,
entries loaded), so a warm figure is known to come from disk.

UDFs: ``x * 2 + 1`` on float64; a null-aware one on int64; ``s.upper() + "!"`` on strings (the string
operations are the largest code numba compiles).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import pyarrow as pa
import arrowdev as ad
from arrowdev.udf import cache
t_import = time.perf_counter() - t0
device = sys.argv[1]
n = 1000

def on(arr):
    col = ad.column(arr)
    return col.to_device() if device == "cuda" else col

def sync(col):
    col.to_pylist() if device == "cpu" else col.to_host()

cases = {
    "x * 2 + 1 (float64)": (lambda x: x * 2 + 1, pa.array([float(i) for i in range(n)]), {}),
    "null-aware (int64)": (lambda x: 0 if x is ad.NA else x + 1, pa.array([i if i % 3 else None for i in range(n)]),
                           {"null_aware": True}),
    's.upper() + "!" (string)': (lambda s: s.upper() + "!", pa.array([f"row {i}" for i in range(n)]), {}),
}
out = {"import": t_import}
for name, (f, data, kwargs) in cases.items():
    col = on(data)
    t = time.perf_counter(); sync(col.apply(f, **kwargs)); first = time.perf_counter() - t
    t = time.perf_counter(); sync(col.apply(f, **kwargs)); again = time.perf_counter() - t
    out[name] = {"first": first, "again": again}
out["cache"] = cache.stats()
print(json.dumps(out))
"""


def run_child(device: str, cache_dir: str) -> dict:
    env = {**os.environ, "ARROWDEV_CACHE_DIR": cache_dir}
    done = subprocess.run([sys.executable, "-c", CHILD, device], capture_output=True, text=True, env=env,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the raw measurements here")
    args = parser.parse_args()
    cold, warm = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            cold.append(run_child(args.device, folder))
            warm.append(run_child(args.device, folder))
    names = [k for k in cold[0] if k not in ("import", "cache")]
    print(f"first UDF call in a fresh process, {args.device}, median of {args.runs} (seconds)")
    print(f"{'':28} {'cold cache':>11} {'warm cache':>11} {'2nd call':>9}")
    print(f"{'import arrowdev':28} {statistics.median(r['import'] for r in cold):11.3f} "
          f"{statistics.median(r['import'] for r in warm):11.3f}")
    for name in names:
        print(f"{name:28} {statistics.median(r[name]['first'] for r in cold):11.3f} "
              f"{statistics.median(r[name]['first'] for r in warm):11.3f} "
              f"{statistics.median(r[name]['again'] for r in warm):9.4f}")
    print(f"cache counts, cold: {cold[-1]['cache']}; warm: {warm[-1]['cache']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "cold": cold, "warm": warm}, f, indent=1)


if __name__ == "__main__":
    main()
