"""Probe (GPU): ``to_device()`` of bench_transfer's table against copying the same pageable buffers by
page-locking them where they are (``cudaHostRegister`` of each buffer's whole pages, piece by piece on worker
threads, each piece DMAed once registered; the few bytes at a buffer's ends staged through pinned memory),
beside the pinned ceiling, in one process, several rounds interleaved (the host side of these copies varies
between runs). Unregistering is timed apart: a library would do it off the call's path, once the DMA fired.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_register.py [--gib 1.0] [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402

import arrowdev as ad  # noqa: E402
from bench_transfer import make_table, table_bytes  # noqa: E402

rt = cp.cuda.runtime
PAGE = os.sysconf("SC_PAGE_SIZE")


def buffers(table) -> list[tuple[int, int]]:
    return [(b.address, b.size) for col in table.columns for chunk in col.chunks for b in chunk.buffers()
            if b is not None and b.size]


class Registered:
    """One transfer by registering the sources' whole pages in pieces on ``threads`` threads."""

    def __init__(self, spans, dst: int, piece: int, threads: int, stream) -> None:
        self.jobs, self.edges = [], []
        position = 0
        for address, size in spans:
            lo = -(-address // PAGE) * PAGE
            hi = (address + size) // PAGE * PAGE
            if hi - lo < piece:  # small buffer: staged whole
                self.edges.append((dst + position, address, size))
            else:
                self.edges.append((dst + position, address, lo - address))
                self.edges.append((dst + position + hi - address, hi, address + size - hi))
                for first in range(lo, hi, piece):
                    self.jobs.append((dst + position + first - address, first, min(piece, hi - first)))
            position += size
        self.pool = ThreadPoolExecutor(threads)
        self.stream = stream
        self.staging = cp.cuda.alloc_pinned_memory(max(1, sum(s for _, _, s in self.edges)))

    def run(self) -> list[int]:
        def one(job):
            d, s, n = job
            rt.hostRegister(s, n, 0)
            rt.memcpyAsync(d, s, n, rt.memcpyHostToDevice, self.stream.ptr)
            return s
        done = list(self.pool.map(one, self.jobs))
        offset = 0
        for d, s, n in self.edges:
            if n:
                import ctypes

                ctypes.memmove(self.staging.ptr + offset, s, n)
                rt.memcpyAsync(d, self.staging.ptr + offset, n, rt.memcpyHostToDevice, self.stream.ptr)
                offset += n
        return done

    def unregister(self, registered: list[int]) -> None:
        list(self.pool.map(rt.hostUnregister, registered))


def setup(gib: float):
    """bench_transfer's table and what the probes copy it with: (PyArrow table, bytes, buffer spans, arrowdev
    table, a stream, device memory and pinned memory of the table's size)."""
    table = make_table(gib)
    nbytes = table_bytes(table)
    spans = buffers(table)
    print(f"{nbytes / 1e9:.2f} GB in {len(spans)} buffers")
    return (table, nbytes, spans, ad.table(table), cp.cuda.Stream(non_blocking=True), cp.cuda.alloc(nbytes),
            cp.cuda.alloc_pinned_memory(nbytes))


def report(ways: dict[str, list[float]], nbytes: int) -> None:
    """One line per way: median time, GB/s, fraction of the "ceiling (pinned -> device)" way, every run."""
    ceiling = median_ms(ways["ceiling (pinned -> device)"])
    for name, samples in ways.items():
        ms = median_ms(samples)
        print(f"{name:42s} median {ms:7.1f} ms {nbytes / ms / 1e6:6.1f} GB/s  of ceiling {ceiling / ms:.2f}  "
              f"(runs: {' '.join(f'{s * 1e3:.0f}' for s in samples)})", flush=True)


def median_ms(samples):
    return statistics.median(samples) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    for cmd in (["lscpu"], ["nvidia-smi", "topo", "-m"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
            print("\n".join(line for line in out.splitlines() if "NUMA" in line or "GPU0" in line or "Model name" in line))
        except Exception as e:  # noqa: BLE001
            print(cmd, e)
    table, nbytes, spans, src, stream, device, pinned = setup(args.gib)

    def timed(fn, sync):
        t0 = time.perf_counter()
        out = fn()
        sync()
        return time.perf_counter() - t0, out

    ways = {"ceiling (pinned -> device)": [], "arrowdev to_device": []}
    variants = [(64 << 20, 4), (64 << 20, 8), (16 << 20, 8), (256 << 20, 4)]
    registered = {v: Registered(spans, device.ptr, *v, stream) for v in variants}
    unregister = {v: [] for v in variants}
    for v in variants:
        ways[f"register, {v[0] >> 20} MiB pieces, {v[1]} threads"] = []
    for round_ in range(args.runs + 1):
        t, _ = timed(lambda: rt.memcpyAsync(device.ptr, pinned.ptr, nbytes, rt.memcpyHostToDevice, stream.ptr),
                     stream.synchronize)
        ways["ceiling (pinned -> device)"].append(t)
        t, out = timed(lambda: src.to_device(), rt.deviceSynchronize)
        del out
        ways["arrowdev to_device"].append(t)
        for v, reg in registered.items():
            t, done = timed(reg.run, stream.synchronize)
            t0 = time.perf_counter()
            reg.unregister(done)
            unregister[v].append(time.perf_counter() - t0)
            ways[f"register, {v[0] >> 20} MiB pieces, {v[1]} threads"].append(t)
        if round_ == 0:
            for k in ways:
                ways[k].clear()
            for k in unregister:
                unregister[k].clear()
    report(ways, nbytes)
    for v, samples in unregister.items():
        print(f"unregister {v[0] >> 20} MiB / {v[1]} threads: {median_ms(samples):.1f} ms")


if __name__ == "__main__":
    main()
