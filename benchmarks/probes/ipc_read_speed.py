"""Probe (GPU, issue 35): how fast a kernel reads memory another process exported by CUDA IPC, against the reader's
own memory. bench_ipc.py's consumer summed the imported 1 GiB table 60-90 us slower than a copy in its own memory
(ipc_handoff_parts.py's "again" lines), while torch's consumer summed its imported tensor at own-memory speed.

The exporter makes the same float64 values three ways (an arrowdev table moved to the GPU, a bare ``cudaMalloc``
through CuPy, a torch tensor where torch is installed) and hands each allocation's legacy IPC handle to one consumer
process, which maps it with ``cudaIpcOpenMemHandle`` (as arrowdev and torch do) and times CuPy's sum over it with
CUDA events (median of ``--runs`` after a warm-up), then over its own copy; and arrowdev's own ``import_ipc`` of the
table. Each line names the alignment (the largest power of two, up to 1 GiB, dividing the address) of the
allocation's base and of the data in both processes: GPU page tables map large pages only where both agree.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/ipc_read_speed.py [--gib 1.0] [--runs 30]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics


def alignment(address: int) -> str:
    """The largest power of two (up to 1 GiB) dividing ``address``, in readable units."""
    bits = min((address & -address).bit_length() - 1, 30) if address else 30
    size = 1 << bits
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size >= 1 << 10 else f"{size} B"


def timed_sum(cp, values, runs: int) -> float:  # noqa: ANN001
    """Median milliseconds of ``values.sum()`` on CuPy's current stream, by CUDA events, after a warm-up."""
    for _ in range(3):
        values.sum()
    samples = []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        values.sum()
        end.record()
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(samples)


def consumer(conn, runs: int, n: int) -> None:  # noqa: ANN001 - a multiprocessing Connection
    import cupy as cp

    import arrowdev as ad

    while True:
        job = conn.recv()
        if job is None:
            break
        label, payload = job
        if label == "arrowdev import_ipc":
            table = ad.import_ipc(payload)
            values = cp.asarray(table.column(0))
            conn.send((label, alignment(values.data.ptr), alignment(values.data.ptr), timed_sum(cp, values, runs)))
            del values, table
            continue
        handle, offset = payload
        base = int(cp.cuda.runtime.ipcOpenMemHandle(handle, cp.cuda.runtime.cudaIpcMemLazyEnablePeerAccess))
        mem = cp.cuda.UnownedMemory(base + offset, n * 8, None)
        values = cp.ndarray(n, cp.float64, cp.cuda.MemoryPointer(mem, 0))
        ms = timed_sum(cp, values, runs)
        del values, mem
        cp.cuda.Device().synchronize()
        cp.cuda.runtime.ipcCloseMemHandle(base)
        conn.send((label, alignment(base), alignment(base + offset), ms))
    own = cp.arange(n, dtype=cp.float64)
    conn.send(("consumer's own memory (cupy.arange)", alignment(own.data.ptr), alignment(own.data.ptr),
               timed_sum(cp, own, runs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    import cupy as cp
    import numpy as np
    import pyarrow as pa

    import arrowdev as ad
    from arrowdev.cuda.ipc import calls

    n = int(args.gib * (1 << 30)) // 8
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=consumer, args=(theirs, args.runs, n))
    proc.start()
    keep = []

    def share(label: str, address: int) -> None:
        base, _ = calls.allocation(address)
        print(f"exporter: {label}: base aligned to {alignment(base)}, data to {alignment(address)}")
        mine.send((label, (calls.get_handle(base), address - base)))

    table = ad.table({"x": pa.array(np.arange(n, dtype=np.float64))}).to_device()
    keep.append(table)
    share("arrowdev table (its pool)", cp.asarray(table.column(0)).data.ptr)
    raw = cp.cuda.runtime.malloc(n * 8)
    cp.ndarray(n, cp.float64, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(raw, n * 8, None), 0))[...] = cp.arange(n)
    cp.cuda.Device().synchronize()
    share("cudaMalloc (CuPy runtime)", raw)
    try:
        import torch

        tensor = torch.arange(n, dtype=torch.float64, device="cuda")
        torch.cuda.synchronize()
        keep.append(tensor)
        share("torch tensor (its caching allocator)", tensor.data_ptr())
    except ImportError:
        print("torch is not installed: its case is skipped")
    mine.send(("arrowdev import_ipc", table.export_ipc()))
    mine.send(None)
    rows = [mine.recv() for _ in range(len(keep) + 3)]
    proc.join()
    cp.cuda.runtime.free(raw)
    print(f"consumer, CuPy's sum over {n * 8 / (1 << 30):.2f} GiB, CUDA events, median of {args.runs}:")
    for label, base_align, data_align, ms in rows:
        print(f"  {label:40s} base aligned to {base_align:>8s}, data to {data_align:>8s}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
