"""Probe (GPU): where the time of a numeric UDF call goes at 10^3 and 10^7 rows (``x * 2 + 1`` on float64):
the whole call timed alone (CUDA events around it, as bench_udf does), the kernel alone (events around the
driver launch, ``launch.launch_flat``), host time per call, and calls queued back to back (one event pair around 200 calls); CuPy's
``x * 2 + 1`` and a device copy the same ways; the call captured as a CUDA graph (``ad.cuda.capture``)
and replayed, the same ways. Then a cProfile of 3 000 calls at 10^3 rows to
``$OUT/numeric_profile.txt``.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/numeric_fixed_costs.py
"""
import cProfile, os, pstats, statistics, time

import cupy as cp

import arrowdev as ad
from arrowdev.udf.run import launch as udf_launch

stream = ad.cuda.runtime.stream_for(0)
kernel_events = []
original_launch = udf_launch.launch_flat


def timed_launch(*args, **kwargs):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    original_launch(*args, **kwargs)
    end.record(stream)
    kernel_events.append((start, end))


def alone(fn, runs=50):
    """Median of CUDA-event times of ``fn`` timed one call at a time; and host seconds per call."""
    fn(); stream.synchronize()
    gpu, host = [], []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        t0 = time.perf_counter()
        out = fn()
        host.append(time.perf_counter() - t0)
        end.record(stream)
        end.synchronize()
        gpu.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        del out
    return statistics.median(gpu), statistics.median(host)


def queued(fn, calls=200):
    """Seconds per call with ``calls`` calls queued back to back, each output dropped once made (the pool,
    stream-ordered, hands its memory to the next call)."""
    fn(); stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(calls):
        fn()
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / calls


with stream:
    for rows in (1000, 10**7):
        x = cp.arange(rows, dtype=cp.float64)
        col = ad.column(x)
        f = lambda v: v * 2 + 1  # noqa: E731
        whole, host = alone(lambda: col.apply(f))
        udf_launch.launch_flat = timed_launch
        kernel_events.clear()
        alone(lambda: col.apply(f))
        udf_launch.launch_flat = original_launch
        kernel = statistics.median(cp.cuda.get_elapsed_time(s, e) / 1e3 for s, e in kernel_events)
        q = queued(lambda: col.apply(f))
        cupy_alone, _ = alone(lambda: x * 2 + 1)
        cupy_q = queued(lambda: x * 2 + 1)
        copy_alone, _ = alone(lambda: x.copy())
        with ad.cuda.capture() as graph:  # the call recorded once as a CUDA graph (arrowdev/cuda/capture.py)
            captured = col.apply(f)
        replay_alone, replay_host = alone(graph.replay)
        replay_q = queued(graph.replay)
        del graph, captured
        nbytes = 2 * x.nbytes
        print(f"rows={rows}: arrowdev call alone {whole*1e3:.4f} ms (host {host*1e6:.1f} us/call), kernel alone "
              f"{kernel*1e3:.4f} ms, queued {q*1e3:.4f} ms/call | CuPy alone {cupy_alone*1e3:.4f} queued "
              f"{cupy_q*1e3:.4f} | copy alone {copy_alone*1e3:.4f} ms ({nbytes/copy_alone/1e9:.0f} GB/s) | "
              f"arrowdev/copy: alone {copy_alone/whole:.2f}, queued {copy_alone/q:.2f}, kernel {copy_alone/kernel:.2f}",
              flush=True)
        print(f"rows={rows}: replayed alone {replay_alone*1e3:.4f} ms (host {replay_host*1e6:.1f} us/replay), queued "
              f"{replay_q*1e3:.4f} ms/replay | replayed/copy: alone {copy_alone/replay_alone:.2f}, queued "
              f"{copy_alone/replay_q:.2f}", flush=True)
    col = ad.column(cp.arange(1000, dtype=cp.float64))
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        col.apply(lambda v: v * 2 + 1)
    profile.disable()
with open(os.path.join(os.environ.get("OUT", "/tmp"), "numeric_profile.txt"), "w") as fh:
    pstats.Stats(profile, stream=fh).sort_stats("tottime").print_stats(45)
    pstats.Stats(profile, stream=fh).sort_stats("cumtime").print_stats(60)
print("profile written")
