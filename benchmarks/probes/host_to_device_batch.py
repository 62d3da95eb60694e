"""Probe (GPU machine): can the driver copy pageable host memory to the GPU faster than arrowdev's staging ring?

CUDA 12.8 added ``cuMemcpyBatchAsync``, whose per-copy attribute ``srcAccessOrder`` tells the driver how it may
read the source: ``ANY`` ("suited for non-CUDA-allocated host pointers such as those from malloc") and
``DURING_API_CALL`` let it read out of stream order, which a plain ``cudaMemcpyAsync`` from pageable memory
(the driver stages it, about 11 GB/s: docs/device.md) may not. This times, in one process and interleaved, the
buffers of bench_transfer's table copied to the device: the pinned ceiling (the same bytes from pinned memory),
``to_device()``, one batch of every buffer with each access order, and batches of 64 MiB pieces issued from
several threads.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_batch.py [--gib 1.0] [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import runtime  # noqa: E402
from bench_transfer import (interleaved_seconds, make_table, print_against_ceiling,  # noqa: E402
                            table_bytes)

PIECE = 64 << 20


def attributes(drv, order_name: str):
    attr = drv.CUmemcpyAttributes()
    attr.srcAccessOrder = getattr(drv.CUmemcpySrcAccessOrder, order_name)
    attr.srcLocHint.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
    attr.dstLocHint.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    attr.dstLocHint.id = 0
    return attr


def batch(drv, copies: list[tuple[int, int, int]], attr, stream_ptr: int) -> None:
    """One cuMemcpyBatchAsync of (device address, host address, bytes) copies."""
    dsts = [drv.CUdeviceptr(d) for d, _, _ in copies]
    srcs = [drv.CUdeviceptr(s) for _, s, _ in copies]
    sizes = [n for _, _, n in copies]
    result = drv.cuMemcpyBatchAsync(dsts, srcs, sizes, len(copies), [attr], [0], 1, drv.CUstream(stream_ptr))
    err = result[0] if isinstance(result, tuple) else result
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemcpyBatchAsync: {err}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    drv = runtime.driver()
    table = make_table(args.gib)
    nbytes = table_bytes(table)
    src = ad.table(table)
    views = [np.frombuffer(b, dtype=np.uint8) for col in table.columns for chunk in col.chunks
             for b in chunk.buffers() if b is not None and b.size]
    device = cp.cuda.alloc(nbytes)
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    stream = cp.cuda.Stream(non_blocking=True)
    whole, pieces, at = [], [], 0
    for v in views:
        whole.append((device.ptr + at, v.ctypes.data, v.nbytes))
        pieces += [(device.ptr + at + o, v.ctypes.data + o, min(PIECE, v.nbytes - o)) for o in range(0, v.nbytes, PIECE)]
        at += v.nbytes
    threads = ThreadPoolExecutor(8)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(8)]

    def threaded(order):
        attr = attributes(drv, order)

        def run():
            def one(k):
                cp.cuda.runtime.setDevice(0)  # makes the device's primary context current in this thread
                batch(drv, pieces[k::8], attr, streams[k].ptr)
                streams[k].synchronize()
            list(threads.map(one, range(8)))
        return run

    ways = {
        "ceiling (pinned -> device)": lambda: cp.cuda.runtime.memcpyAsync(
            device.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice, stream.ptr),
        "to_device()": lambda: src.to_device(),
        "batch, ANY": lambda: batch(drv, whole, attributes(drv, "CU_MEMCPY_SRC_ACCESS_ORDER_ANY"), stream.ptr),
        "batch, DURING_API_CALL": lambda: batch(drv, whole, attributes(drv, "CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL"),
                                                stream.ptr),
        "batch, STREAM": lambda: batch(drv, whole, attributes(drv, "CU_MEMCPY_SRC_ACCESS_ORDER_STREAM"), stream.ptr),
        "64 MiB pieces, 8 threads, ANY": threaded("CU_MEMCPY_SRC_ACCESS_ORDER_ANY"),
        "64 MiB pieces, 8 threads, DURING_API_CALL": threaded("CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL"),
    }
    samples = interleaved_seconds(ways, args.runs, cp.cuda.runtime.deviceSynchronize, dropped=(RuntimeError,))
    got = np.empty(views[0].nbytes, dtype=np.uint8)  # the batched copy put the bytes where they belong
    cp.cuda.runtime.memcpy(got.ctypes.data, whole[0][0], got.nbytes, cp.cuda.runtime.memcpyDeviceToHost)
    assert np.array_equal(got, views[0])
    print(f"table {nbytes / 1e9:.2f} GB in {len(views)} buffers; device "
          f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print_against_ceiling(samples, "ceiling (pinned -> device)", nbytes)

if __name__ == "__main__":
    main()
