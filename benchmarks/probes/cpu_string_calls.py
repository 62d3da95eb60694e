"""Probe (CPU, not a benchmark against a peer): milliseconds and page faults per ``col.apply(f)`` on the CPU for
string UDFs (and a numeric and a bool one beside them) over 10^6 short strings, each the best and the median of 7
calls after two warm-up calls, with the minor page faults a call takes (fresh pages the kernel zeroes on first
touch). The figures behind docs/strings.md ("What the CPU does") and docs/udf.md ("Scratch kept between CPU
calls"): run it on two checkouts to compare.

    python3 benchmarks/probes/cpu_string_calls.py [--rows 1000000]
"""
import argparse
import resource
import time

import numpy as np
import pyarrow as pa

import arrowdev as ad

WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "iota", "kappa"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    n = parser.parse_args().rows
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(WORDS), size=10_000)
    base = [f"{WORDS[p]}{i % 100}" for i, p in enumerate(picks)]  # bench_hosts.py's strings
    strings = ad.column(pa.array((base * (n // len(base) + 1))[:n]))
    numbers = ad.column(pa.array(rng.random(n)))
    udfs = [("s + '!'", strings, lambda s: s + "!"), ("s.upper() + '!'", strings, lambda s: s.upper() + "!"),
            ("s.replace('a', 'b')", strings, lambda s: s.replace("a", "b")), ("s (its input)", strings, lambda s: s),
            ("x * 2 + 1", numbers, lambda v: v * 2 + 1), ("x > 0.5", numbers, lambda v: v > 0.5)]
    print(f"{n:,} rows")
    for name, col, f in udfs:
        col.apply(f)
        col.apply(f)
        times, before = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(7):
            start = time.perf_counter()
            col.apply(f)
            times.append(time.perf_counter() - start)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 7
        print(f"{name:22} best {min(times) * 1e3:8.2f} ms  median {np.median(times) * 1e3:8.2f} ms  "
              f"page faults a call {faults:8.0f}")


if __name__ == "__main__":
    main()
