"""Probe (CPU, not a benchmark against a peer): milliseconds, page faults and memory per ``col.apply(f)`` on the
CPU for string UDFs (and a numeric and a bool one beside them) over 10^6 short strings. Each UDF runs in a fresh
process: compiled on 1000 rows, then one call whose peak resident memory above what was resident before it is
sampled every millisecond (against the output's size), then the best and the median of 7 calls with the minor
page faults a call takes (fresh pages the kernel zeroes on first touch), and what stays resident after them
above the first call's start (kept scratch included). The figures behind docs/strings.md ("What the CPU does")
and docs/udf.md ("Scratch kept between CPU calls"): run it on two checkouts to compare.

    python3 benchmarks/probes/cpu_string_calls.py [--rows 1000000] [--udfs "s.upper()" "s + '!'"]
"""
import argparse
import resource
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa

WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "iota", "kappa"]
UDFS = {"s + '!'": ("s", lambda s: s + "!"), "s.upper()": ("s", lambda s: s.upper()),
        "s.upper() + '!'": ("s", lambda s: s.upper() + "!"),
        "s.replace('a', 'b')": ("s", lambda s: s.replace("a", "b")), "s (its input)": ("s", lambda s: s),
        "x * 2 + 1": ("x", lambda v: v * 2 + 1), "x > 0.5": ("x", lambda v: v > 0.5)}


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _peak_above(call) -> tuple[int, object]:
    """(peak resident bytes during ``call()`` above those resident before it, its result)."""
    before, peak, done = _rss(), [0], [False]

    def watch() -> None:
        while not done[0]:
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out = call()
    finally:
        done[0] = True
        watcher.join()
    return max(peak[0], _rss()) - before, out


def one(name: str, n: int) -> None:
    import arrowdev as ad

    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(WORDS), size=10_000)
    base = [f"{WORDS[p]}{i % 100}" for i, p in enumerate(picks)]  # bench_hosts.py's strings
    which, f = UDFS[name]
    col = ad.column(pa.array((base * (n // len(base) + 1))[:n]) if which == "s" else pa.array(rng.random(n)))
    col[:1000].apply(f)  # compiled
    start = _rss()
    peak, out = _peak_above(lambda: col.apply(f))
    del out
    col.apply(f)
    times, before = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(7):
        t0 = time.perf_counter()
        out = col.apply(f)
        times.append(time.perf_counter() - t0)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 7
    kept = _rss() - start - out.nbytes
    print(f"{name:22} best {min(times) * 1e3:8.2f} ms  median {np.median(times) * 1e3:8.2f} ms  faults a call "
          f"{faults:6.0f}  first call's peak {peak / 2**20:6.1f} MiB ({peak / out.nbytes:5.2f} x the output)  "
          f"kept after {kept / 2**20:6.1f} MiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--udfs", nargs="+", default=list(UDFS), choices=list(UDFS))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args.one, args.rows)
    print(f"{args.rows:,} rows")
    for name in args.udfs:
        subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--one", name], check=True)


if __name__ == "__main__":
    main()
