"""Probe (GPU): host time of ``column.apply`` per call (median of 500), split into the time before the
kernel is queued and the launch itself, for 1 000 and 10^8 rows; then a cProfile of 3 000 calls written to
``$OUT/profile.txt``. The figures behind docs/udf.md's host-time numbers.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/udf_host_time.py
"""
import cProfile, pstats, statistics, time, io, os
import cupy as cp
import arrowdev as ad
from arrowdev.udf import memory as A  # where Memory.launch finds launch()

def member(x):
    return x in [1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980, 1027, 1000, 59, 980]

marks = []
orig = A.launch
def timed_launch(*a, **k):
    marks.append(time.perf_counter())
    orig(*a, **k)
    marks.append(time.perf_counter())
A.launch = timed_launch
for rows in (1000, 10**8):
    g = ad.column(cp.arange(rows, dtype=cp.int64) % 2000)
    for f in (member, lambda x: x * 2 + 1):
        g.apply(f); cp.cuda.runtime.deviceSynchronize()
        pre, total, inl = [], [], []
        for _ in range(500):
            marks.clear()
            t0 = time.perf_counter(); o = g.apply(f); t1 = time.perf_counter(); del o
            pre.append(marks[0] - t0); inl.append(marks[1] - marks[0]); total.append(t1 - t0)
        cp.cuda.runtime.deviceSynchronize()
        print(f"rows={rows} {f.__name__}: before launch {statistics.median(pre)*1e6:.1f} us, launch {statistics.median(inl)*1e6:.1f} us, whole call {statistics.median(total)*1e6:.1f} us", flush=True)
A.launch = orig
g = ad.column(cp.arange(1000, dtype=cp.int64))
pr = cProfile.Profile(); pr.enable()
for _ in range(3000):
    g.apply(member)
pr.disable()
with open(os.environ["OUT"] + "/profile.txt", "w") as fh:
    pstats.Stats(pr, stream=fh).sort_stats("cumtime").print_stats(70)
    pstats.Stats(pr, stream=fh).sort_stats("tottime").print_stats(50)
print("profile written")
