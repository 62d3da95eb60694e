"""Probe (GPU): host time of ``column.apply`` per call (median of 500), split into the time before the
kernel is queued and the launch itself, for 1 000 and 10^8 rows; then a cProfile of 3 000 calls written to
``$OUT/profile.txt``. The figures behind docs/udf.md's host-time numbers.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/udf_host_time.py
"""
import cProfile, pstats, os
import cupy as cp
import arrowdev as ad
from udf_call_parts import split_at_launch  # the launch wrapped where both launch paths reach the driver

def member(x):
    return x in [1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980]

for rows in (1000, 10**8):
    g = ad.column(cp.arange(rows, dtype=cp.int64) % 2000)
    for f in (member, lambda x: x * 2 + 1):
        g.apply(f); g.apply(f); cp.cuda.runtime.deviceSynchronize()
        before, launching, after = split_at_launch(lambda: g.apply(f), 500)
        cp.cuda.runtime.deviceSynchronize()
        print(f"rows={rows} {f.__name__}: before launch {before:.1f} us, launch {launching:.1f} us, whole call (the medians added) "
              f"{before + launching + after:.1f} us", flush=True)
g = ad.column(cp.arange(1000, dtype=cp.int64))
pr = cProfile.Profile(); pr.enable()
for _ in range(3000):
    g.apply(member)
pr.disable()
with open(os.environ["OUT"] + "/profile.txt", "w") as fh:
    pstats.Stats(pr, stream=fh).sort_stats("cumtime").print_stats(70)
    pstats.Stats(pr, stream=fh).sort_stats("tottime").print_stats(50)
print("profile written")
