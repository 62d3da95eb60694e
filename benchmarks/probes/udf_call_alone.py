"""Probe (GPU), for before/after comparisons of the host work in a numeric UDF call: ``x * 2 + 1`` on float64
at 10^3 and 10^7 rows, the CUDA-event median of many calls timed one at a time (as bench_udf times them,
so the host work before the launch counts), the host microseconds per call, and calls queued back to back.
Public API only, so any arrowdev tree runs it: ``PYTHONPATH=<tree> python3 udf_call_alone.py``.
"""
import statistics
import time

import cupy as cp

import arrowdev as ad


def main(runs=300, queued_calls=300):
    stream = ad.cuda.runtime.stream_for(0)
    f = lambda v: v * 2 + 1  # noqa: E731
    with stream:
        for rows in (1000, 10**7):
            col = ad.column(cp.arange(rows, dtype=cp.float64))
            for _ in range(20):
                col.apply(f)
            stream.synchronize()
            gpu, host = [], []
            for _ in range(runs):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                t0 = time.perf_counter()
                out = col.apply(f)
                host.append(time.perf_counter() - t0)
                end.record(stream)
                end.synchronize()
                gpu.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
                del out
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            for _ in range(queued_calls):
                col.apply(f)
            end.record(stream)
            end.synchronize()
            queued = cp.cuda.get_elapsed_time(start, end) * 1e3 / queued_calls
            print(f"rows={rows:>9}: alone {statistics.median(gpu):7.1f} us (host {statistics.median(host) * 1e6:6.1f} "
                  f"us), queued {queued:7.1f} us/call", flush=True)


if __name__ == "__main__":
    main()
