"""Probe (GPU machine): how fast can this host copy pageable memory into pinned memory at all?

``to_device()`` of pageable memory must copy every byte into pinned memory before the DMA can read it, so it
can go no faster than the host's copy. This times, in one process and in interleaved rounds over
bench_transfer's table (its own pageable buffers): the pinned DMA of the same bytes (the ceiling);
``to_device()``; the copy alone into a ring of pinned slots as the staging ring does it (4 MiB pieces,
``staging.RING_SLOTS`` slots, no DMA) with 12 and 16 threads; that copy while a DMA of another pinned
buffer runs beside it (the DMA's own rate during the copy printed too); and the pinned DMA cut into the
ring's pieces, queued back to back on one stream; each as a fraction of the ceiling.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_copy_bound.py [--gib 1.0] [--rounds 9]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import staging  # noqa: E402
from bench_transfer import interleaved_seconds, make_table, print_against_ceiling, table_bytes  # noqa: E402

DMA_PIECE = 64 << 20


def source_pieces(table) -> list[tuple[int, int]]:
    """(address, bytes) of every staging piece of the table's buffers."""
    out = []
    for col in table.columns:
        for chunk in col.chunks:
            for buf in chunk.buffers():
                if buf is not None:
                    out += [(buf.address + o, min(staging.PIECE, buf.size - o))
                            for o in range(0, buf.size, staging.PIECE)]
    return out


def ring_copy(pieces: list[tuple[int, int]], slots: list[int], pool: ThreadPoolExecutor):
    """The staging ring's host side alone: piece i copied into slot i % slots, no DMA, no waiting."""
    def copy(i: int) -> None:
        ctypes.memmove(slots[i % len(slots)], *pieces[i])  # ctypes drops the GIL: the threads copy in parallel

    def run() -> None:
        list(pool.map(copy, range(len(pieces))))
    return run


class BesideDMA:
    """Runs ``work`` while another thread DMAs a pinned buffer to the device in 64 MiB pieces, back to back;
    keeps the DMA's rate during ``work`` (GB/s) in ``rates``."""

    def __init__(self, work, pinned: int, device: int, nbytes: int, stream) -> None:
        self.work, self.pinned, self.device, self.nbytes, self.stream = work, pinned, device, nbytes, stream
        self.rates: list[float] = []

    def __call__(self) -> None:
        done, moved = threading.Event(), [0]

        def dma() -> None:
            with cp.cuda.Device(0):
                offset = 0
                while not done.is_set():
                    size = min(DMA_PIECE, self.nbytes - offset)
                    cp.cuda.runtime.memcpyAsync(self.device + offset, self.pinned + offset, size,
                                                cp.cuda.runtime.memcpyHostToDevice, self.stream.ptr)
                    self.stream.synchronize()
                    moved[0] += size
                    offset = (offset + size) % self.nbytes
        mover = threading.Thread(target=dma)
        start = time.perf_counter()
        mover.start()
        self.work()
        done.set()
        seconds = time.perf_counter() - start
        mover.join()
        self.rates.append(moved[0] / seconds / 1e9)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    table = make_table(args.gib)
    nbytes = table_bytes(table)
    pieces = source_pieces(table)
    src = ad.table(table)
    stream = cp.cuda.Stream(non_blocking=True)
    device = cp.cuda.alloc(nbytes)
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    ring = [cp.cuda.alloc_pinned_memory(staging.PIECE) for _ in range(staging.RING_SLOTS)]
    slots = [s.ptr for s in ring]
    pools = {t: ThreadPoolExecutor(t) for t in (12, 16)}

    def ceiling() -> None:
        cp.cuda.runtime.memcpyAsync(device.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice, stream.ptr)

    def ceiling_in_pieces() -> None:  # the ring's DMAs without the ring: one per 4 MiB piece, back to back
        for offset in range(0, nbytes, staging.PIECE):
            cp.cuda.runtime.memcpyAsync(device.ptr + offset, pinned.ptr + offset, min(staging.PIECE, nbytes - offset),
                                        cp.cuda.runtime.memcpyHostToDevice, stream.ptr)

    beside = {t: BesideDMA(ring_copy(pieces, slots, pools[t]), pinned.ptr, device.ptr, nbytes, stream) for t in pools}
    ways = {"pinned DMA (ceiling)": ceiling, f"pinned DMA in {staging.PIECE >> 20} MiB pieces": ceiling_in_pieces,
            "to_device()": src.to_device}
    for t in pools:
        ways[f"host copy into the ring, {t} threads"] = ring_copy(pieces, slots, pools[t])
    for t in pools:
        ways[f"host copy, {t} threads, beside a DMA"] = beside[t]
    print(f"{nbytes / 1e9:.2f} GB in {len(pieces)} pieces of at most {staging.PIECE >> 20} MiB; "
          f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; {os.cpu_count()} cores; {args.rounds} rounds")
    samples = interleaved_seconds(ways, args.rounds, cp.cuda.runtime.deviceSynchronize)
    print_against_ceiling(samples, "pinned DMA (ceiling)", nbytes)
    for t, way in beside.items():
        print(f"the DMA beside the {t}-thread copy: median {statistics.median(way.rates[1:]):.1f} GB/s")


if __name__ == "__main__":
    main()
