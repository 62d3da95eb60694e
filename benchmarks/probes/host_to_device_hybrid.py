"""Probe (GPU machine): host-to-device of pageable memory with two paths at once. Staging through pinned
memory is bound by the host's copy bandwidth (each byte read, written, read again by the DMA); page-locking
the source in place (``cudaHostRegister``) copies nothing but is bound by the driver's page pinning. Each
alone reached about 0.69 of the pinned ceiling on the H100 machine; run side by side on disjoint parts of the
data, on two streams, they might add up. Times, interleaved in one process, bench_transfer's table:
the pinned ceiling, ``to_device()``, the staging ring with 16 workers, and hybrids registering a fraction of
each large buffer's pages (on 2 or 4 threads) while arrowdev's ring stages the rest. Unregistering is timed
apart (a library would do it off the call's path).

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_hybrid.py [--gib 1.0] [--runs 7]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402

from arrowdev.gpu import staging  # noqa: E402
from host_to_device_register import PAGE, report, setup  # noqa: E402

rt = cp.cuda.runtime
REGISTER_PIECE = 64 << 20


class Hybrid:
    """Every buffer's pages cut into REGISTER_PIECE pieces; piece k is registered where k * fraction crosses
    an integer (an even spread), the rest (buffer ends included) staged by arrowdev's ring."""

    def __init__(self, spans, dst: int, fraction: float, threads: int) -> None:
        self.registered_jobs, self.staged = [], []
        position, credit = 0, 0.0
        for address, size in spans:
            lo, hi = -(-address // PAGE) * PAGE, (address + size) // PAGE * PAGE
            if hi - lo < REGISTER_PIECE:
                self.staged.append((dst + position, address, size, None))
            else:
                self.staged.append((dst + position, address, lo - address, None))
                self.staged.append((dst + position + hi - address, hi, address + size - hi, None))
                for first in range(lo, hi, REGISTER_PIECE):
                    piece = (dst + position + first - address, first, min(REGISTER_PIECE, hi - first), None)
                    credit += fraction
                    if credit >= 1:
                        credit -= 1
                        self.registered_jobs.append(piece)
                    else:
                        self.staged.append(piece)
            position += size
        self.staged = [p for s in self.staged if s[2] for p in staging.split(*s)]
        self.pool = ThreadPoolExecutor(threads)
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]

    def run(self) -> list[int]:
        def register(job):
            d, s, n, _ = job
            rt.hostRegister(s, n, 0)
            rt.memcpyAsync(d, s, n, rt.memcpyHostToDevice, self.streams[0].ptr)
            return s
        futures = [self.pool.submit(register, job) for job in self.registered_jobs]
        held = staging.host_to_device(self.staged, 0, self.streams[1])
        done = [f.result() for f in futures]
        for s in self.streams:
            s.synchronize()
        del held
        return done

    def unregister(self, registered: list[int]) -> None:
        list(self.pool.map(rt.hostUnregister, registered))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    table, nbytes, spans, src, stream, device, pinned = setup(args.gib)
    sixteen = ThreadPoolExecutor(max_workers=16, thread_name_prefix="probe-staging")
    twelve = staging._workers

    def with_sixteen():
        staging._workers, staging.WORKERS = sixteen, 16
        try:
            out = src.to_device()
            rt.deviceSynchronize()
        finally:
            staging._workers, staging.WORKERS = twelve, 12
        return out

    hybrids = {(f, t): Hybrid(spans, device.ptr, f, t) for f in (0.25, 0.4, 0.5) for t in (2, 4)}
    ways = {"ceiling (pinned -> device)": lambda: rt.memcpyAsync(device.ptr, pinned.ptr, nbytes,
                                                                  rt.memcpyHostToDevice, stream.ptr),
            "arrowdev to_device (12 workers)": lambda: src.to_device(),
            "to_device, 16 workers": with_sixteen}
    samples = {k: [] for k in ways}
    unregister = {k: [] for k in hybrids}
    for k in hybrids:
        samples[f"hybrid: {k[0]:.2f} registered on {k[1]} threads"] = []
    for round_ in range(args.runs + 1):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            out = fn()
            stream.synchronize()
            rt.deviceSynchronize()
            if round_:
                samples[name].append(time.perf_counter() - t0)
            del out
        for k, hybrid in hybrids.items():
            t0 = time.perf_counter()
            done = hybrid.run()
            t1 = time.perf_counter()
            hybrid.unregister(done)
            if round_:
                samples[f"hybrid: {k[0]:.2f} registered on {k[1]} threads"].append(t1 - t0)
                unregister[k].append(time.perf_counter() - t1)
    check = cp.asnumpy(cp.ndarray(nbytes, cp.uint8, device))
    expected = b"".join(ctypes.string_at(a, n) for a, n in spans)
    assert check.tobytes() == expected, "the hybrid copy is wrong"
    report(samples, nbytes)
    for k, xs in unregister.items():
        print(f"unregister after hybrid {k}: {statistics.median(xs) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
