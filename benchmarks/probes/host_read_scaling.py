"""Probe (GPU machine with several GPUs): what one host gives N GPUs reading at once, the ceiling under the scale
job's strong and weak scaling (docs/distributed.md, "What bounds the read at 4 GPUs").

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_read_scaling.py [--gpus 1 2 4] [--files-per-gpu 4]

One process a GPU (``CUDA_VISIBLE_DEVICES`` its own), started together and lined up at a barrier before every
timed repetition, so the N processes run each step at the same moment. Each process has its own
``--files-per-gpu`` files of bench_scale's dataset (the weak-scaling shape: the same bytes a GPU at every N).
Steps, medians of ``--repeats`` after a warm-up:

- ``h2d``: 2 GiB from pinned host memory to the GPU (the host link alone);
- ``pread``: the files from the page cache into pinned host memory by 8 threads (the host's memory alone);
- ``parquet``: libcudf's read of the files, all in one read (what a partition of the scale job does first);
- ``parquet, local pages``: the same after the process copied its files while bound to its GPU's NUMA node, so
  that their page-cache pages are that node's memory (the dataset's writers put them wherever they ran).

Per step and N: the slowest process's seconds, the aggregate GB/s, and the aggregate against N x the one-GPU
rate (1.00: the host gives N GPUs N times one GPU's rate). Each process is bound to its GPU's NUMA node's CPUs
(as dask-cuda's workers are) unless ``--no-affinity``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scale_data  # noqa: E402
import scale_job  # noqa: E402

STEPS = ("h2d", "pread", "parquet", "parquet, local pages")


def _local_cpus(bus_id: str) -> set[int]:
    """The CPUs of the NUMA node a GPU hangs off (sysfs), all CPUs where sysfs does not say."""
    path = Path("/sys/bus/pci/devices") / bus_id.lower() / "local_cpulist"
    if not path.exists():
        return set(range(os.cpu_count() or 1))
    cpus: set[int] = set()
    for part in path.read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _pread_all(paths: list[str], buf: Any, threads: int) -> int:
    """Every byte of ``paths`` into ``buf`` (a writable byte view), ``threads`` threads of 16 MiB reads."""
    chunk = 16 << 20
    jobs, at = [], 0
    for p in paths:
        size = os.path.getsize(p)
        jobs += [(p, off, at + off, min(chunk, size - off)) for off in range(0, size, chunk)]
        at += size

    def one(job: tuple[str, int, int, int]) -> int:
        p, off, dst, n = job
        fd = os.open(p, os.O_RDONLY)
        try:
            return os.preadv(fd, [buf[dst:dst + n]], off)
        finally:
            os.close(fd)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(one, jobs))


def _worker(gpu: int, paths: list[str], barrier: Any, out: Any, repeats: int, affinity: bool) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    os.environ.setdefault("KVIKIO_NTHREADS", "8")  # arrowdev's read_parquet sets the same on its workers
    import cupy as cp
    import numpy as np
    import pylibcudf as plc

    bus = cp.cuda.runtime.deviceGetPCIBusId(0)
    cpus = _local_cpus(bus)
    if affinity:
        os.sched_setaffinity(0, cpus)
    sync = cp.cuda.Device().synchronize
    file_bytes = sum(os.path.getsize(p) for p in paths)
    pinned = cp.cuda.alloc_pinned_memory(max(file_bytes, 2 << 30))
    host = np.frombuffer(pinned, np.uint8, max(file_bytes, 2 << 30))
    host[:] = 1  # first touch: the pages land on this process's node
    dev = cp.empty(2 << 30, cp.uint8)
    local = [f"{p}.local-{gpu}" for p in paths]

    def read(sources: list[str]) -> None:
        builder = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo(sources))
        builder = builder.column_names(scale_job.COLUMNS) if hasattr(builder, "column_names") else \
            builder.columns(scale_job.COLUMNS)
        plc.io.parquet.read_parquet(builder.build())
        sync()

    steps = {"h2d": lambda: (dev.set(host[:2 << 30]), sync()),
             "pread": lambda: _pread_all(paths, memoryview(host), 8),
             "parquet": lambda: read(paths),
             "parquet, local pages": lambda: read(local)}
    nbytes = {"h2d": 2 << 30, "pread": file_bytes, "parquet": file_bytes, "parquet, local pages": file_bytes}
    for p, q in zip(paths, local):
        shutil.copyfile(p, q)
    result: dict[str, Any] = {"gpu": gpu, "bus": bus, "cpus": len(cpus), "bytes": nbytes}
    for name in STEPS:
        times = []
        for i in range(repeats + 1):
            barrier.wait()
            t0 = time.perf_counter()
            steps[name]()
            if i:
                times.append(time.perf_counter() - t0)
        result[name] = statistics.median(times)
    for q in local:
        os.unlink(q)
    out.put(result)


def run(n: int, paths: list[str], per_gpu: int, repeats: int, affinity: bool) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(g, paths[g * per_gpu:(g + 1) * per_gpu], barrier, out, repeats,
                                                affinity)) for g in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join()
    return sorted(results, key=lambda r: r["gpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rows", type=int, default=400_000_000, help="the dataset's rows (bench_scale's default)")
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--files-per-gpu", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-affinity", action="store_true")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    folder = args.data_dir or f"/tmp/arrowdev-scale/{args.rows}x{args.files}"
    paths = scale_data.ensure(folder, args.rows, args.files)
    for cmd in (["nvidia-smi", "topo", "-m"], ["lscpu"]):
        shown = subprocess.run(cmd, capture_output=True, text=True).stdout
        print("\n".join(line for line in shown.splitlines() if cmd[0] == "nvidia-smi" or "NUMA" in line
                        or "Model name" in line or "Socket" in line), flush=True)
    one: dict[str, float] = {}
    for n in args.gpus:
        results = run(n, paths, args.files_per_gpu, args.repeats, not args.no_affinity)
        print(f"{n} GPU(s), affinity {'off' if args.no_affinity else 'GPU node'}: "
              + ", ".join(f"GPU {r['gpu']} ({r['cpus']} cpus)" for r in results), flush=True)
        for name in STEPS:
            slowest = max(r[name] for r in results)
            agg = sum(r["bytes"][name] for r in results) / slowest / 1e9
            one.setdefault(name, agg)
            each = " ".join(f"{1e3 * r[name]:.0f}" for r in results)
            print(f"  {name:22s} ms per process [{each}]  aggregate {agg:6.1f} GB/s  "
                  f"{agg / (n * one[name]):.2f} of {n} x one GPU", flush=True)


if __name__ == "__main__":
    main()
