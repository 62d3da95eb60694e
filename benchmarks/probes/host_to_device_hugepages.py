"""Probe (GPU machine): does the page size of host memory bound ``to_device()``?

The staging ring's copy reads the pageable source and writes pinned slots; with 4 KiB pages every 4 KiB of
both costs a TLB entry, and the host (transparent huge pages on request only) gives 2 MiB pages only to memory
that asks (``madvise(MADV_HUGEPAGE)``). This times ``to_device()`` of bench_transfer's table, interleaved round
by round, with its source buffers copied into memory that asked for huge pages or refused them, and with the
ring's slots as they are (CuPy's pinned pool, ``cudaHostAlloc``) or in huge-page memory page-locked with
``cudaHostRegister``; beside the pinned ceiling. It prints how much of each region the kernel backed with huge
pages (``AnonHugePages`` in /proc/self/smaps).

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_hugepages.py [--rounds 9]
"""
from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402
import pyarrow as pa  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import memory, staging  # noqa: E402
from bench_transfer import (interleaved_seconds, make_table, print_against_ceiling,  # noqa: E402
                            table_bytes)

HUGE = 2 << 20
MADV_HUGEPAGE, MADV_NOHUGEPAGE = 14, 15
_libc = ctypes.CDLL(None, use_errno=True)
_kept: list = []


def region(nbytes: int, huge: bool) -> int:
    """The address of ``nbytes`` of fresh anonymous memory, 2 MiB aligned, that asked for huge pages or
    refused them, every page touched."""
    m = mmap.mmap(-1, nbytes + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # shared memory gets no THP
    _kept.append(m)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    address = (base + HUGE - 1) // HUGE * HUGE
    if _libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(nbytes), MADV_HUGEPAGE if huge else MADV_NOHUGEPAGE):
        raise OSError(ctypes.get_errno(), "madvise")
    ctypes.memset(address, 0, nbytes)
    return address


def huge_kib(address: int, nbytes: int) -> int:
    """KiB of [address, address + nbytes) backed by huge pages (AnonHugePages of the mappings it spans)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo < address + nbytes and hi > address
            elif inside and head == "AnonHugePages:":
                total += int(line.split()[1])
    return total


def table_in(table: pa.Table, huge: bool) -> tuple[ad.ArrowTable, int]:
    """The table with every buffer copied into one region (huge pages asked for or refused)."""
    buffers = [b for col in table.columns for chunk in col.chunks for b in chunk.buffers() if b is not None]
    nbytes = sum(-(-b.size // 64) * 64 for b in buffers)
    address = region(nbytes, huge)
    at, columns = address, {}
    for name, col in zip(table.column_names, table.columns):
        chunk = col.chunks[0]
        moved = []
        for b in chunk.buffers():
            if b is None:
                moved.append(None)
                continue
            ctypes.memmove(at, b.address, b.size)
            moved.append(pa.foreign_buffer(at, b.size, base=_kept[-1]))
            at += -(-b.size // 64) * 64
        columns[name] = pa.Array.from_buffers(chunk.type, len(chunk), moved, chunk.null_count, chunk.offset)
    return ad.table(pa.table(columns)), huge_kib(address, nbytes)


class HugeSlots:
    """Ring slots in huge-page memory, page-locked once (``cudaHostRegister``), handed out in turn."""

    def __init__(self, slots: int, size: int) -> None:
        self.size = size
        self.base = region(slots * size, huge=True)
        cp.cuda.runtime.hostRegister(self.base, slots * size, 0)
        self.ptrs = [self.base + i * size for i in range(slots)]
        self.next = 0
        self.huge_kib = huge_kib(self.base, slots * size)

    def __call__(self, nbytes: int) -> types.SimpleNamespace:
        assert nbytes <= self.size
        ptr = self.ptrs[self.next % len(self.ptrs)]
        self.next += 1
        return types.SimpleNamespace(ptr=ptr, size=nbytes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip())
    table = make_table(1.0)
    nbytes = table_bytes(table)
    huge_src, huge_src_kib = table_in(table, huge=True)
    small_src, small_src_kib = table_in(table, huge=False)
    slots = HugeSlots(staging.RING_SLOTS, staging.PIECE)
    print(f"source with huge pages asked: {huge_src_kib >> 10} MiB of {nbytes >> 20} MiB on huge pages; refused: "
          f"{small_src_kib >> 10} MiB; ring slots: {slots.huge_kib >> 10} of {staging.RING_SLOTS * staging.PIECE >> 20} MiB")
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    device = cp.cuda.alloc(nbytes)
    stream = cp.cuda.Stream(non_blocking=True)
    huge_memory = types.SimpleNamespace(PinnedBuffer=slots)

    def with_huge_slots(src):
        def run():
            staging.memory = huge_memory
            try:
                return src.to_device()
            finally:
                staging.memory = memory
        return run

    ways = {
        "ceiling (pinned -> device)": lambda: cp.cuda.runtime.memcpyAsync(device.ptr, pinned.ptr, nbytes, 1, stream.ptr),
        "source 4 KiB pages, ring as is": lambda: small_src.to_device(),
        "source huge pages, ring as is": lambda: huge_src.to_device(),
        "source 4 KiB pages, ring on huge pages": with_huge_slots(small_src),
        "source huge pages, ring on huge pages": with_huge_slots(huge_src),
    }
    samples = interleaved_seconds(ways, args.rounds, cp.cuda.runtime.deviceSynchronize)
    assert with_huge_slots(huge_src)().to_host().to_pyarrow().equals(table)
    print_against_ceiling(samples, "ceiling (pinned -> device)", nbytes)

if __name__ == "__main__":
    main()
