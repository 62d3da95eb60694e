"""Probe: where a Dask task's round trip goes, and what dask-cuda's worker adds to it.

bench_dask's part 3 found a bare ``client.submit`` round trip of 7.3 ms on an idle dask-cuda cluster on the
H100 machine (2.0-2.8 ms with distributed's ``LocalCluster`` on the 2-core machine), against 1 ms of UDF.
This times, on an idle cluster (30 ms of rest before each round), a task returning its argument, split by
clocks read in the client and in the task (one host: ``time.monotonic`` is the same clock in every
process): submit -> the task starts, the task, the task ends -> the client sees it done. The clusters, one
worker process with one thread each: distributed's ``LocalCluster``; dask-cuda's ``LocalCUDACluster`` as
bench_dask starts it; and, where dask-cuda is installed, ``LocalCUDACluster`` without device spilling
(``device_memory_limit=0``). Arguments: a small int, and (``--gpu``) a persisted arrowdev device table; with
``--gpu`` also bench_dask's UDF pipeline as the task (its partition of ``--rows`` rows on the worker's GPU),
whose time in the task is set beside the same pipeline in the client's process.

    python3 benchmarks/probes/dask_round_trip.py [--gpu] [--rounds 21]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

_BENCHMARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, _BENCHMARKS)
# the workers import bench_dask's pipeline too
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_BENCHMARKS, os.environ.get("PYTHONPATH")) if p)

from distributed import Client, LocalCluster, wait  # noqa: E402

import arrowdev as ad  # noqa: E402

REST_S = 0.03  # three times the client's batching interval (distributed's Client: BatchedSend, 10 ms)


def stamped(x: Any, run: int) -> tuple[float, float]:
    t0 = time.monotonic()
    return t0, time.monotonic()


def piped(t: ad.ArrowTable, run: int) -> tuple[float, float, ad.ArrowTable]:
    """bench_dask's pipeline on the partition, finished on the GPU; its start and end, and its result
    (which the worker sizes, as it would the result of a collection's task)."""
    from bench_dask import pipeline

    t0 = time.monotonic()
    out = pipeline(t)
    out.column("y")._wait_for_producers()
    return t0, time.monotonic(), out


def _stamps(result: tuple) -> tuple[float, float]:
    return result[0], result[1]


def rounds(client: Client, arg: Any, n: int, task: Any = stamped) -> dict[str, float]:
    """Median ms of each part of a round trip over ``n`` rounds on an idle cluster (after one untimed)."""
    parts: dict[str, list[float]] = {"to start": [], "task": [], "back": [], "whole": []}
    for run in range(n + 1):
        time.sleep(REST_S)
        t0 = time.monotonic()
        fut = client.submit(task, arg, run, pure=False)
        wait(fut)
        t3 = time.monotonic()
        stamps = client.submit(_stamps, fut, pure=False)
        t1, t2 = stamps.result()
        client.cancel([fut, stamps])
        if run:
            for name, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                parts[name].append(seconds * 1e3)
    return {name: statistics.median(v) for name, v in parts.items()}


def clusters(gpu: bool) -> list[tuple[str, Any]]:
    made = [("distributed LocalCluster", lambda: LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                                              dashboard_address=":0"))]
    if not gpu:
        return made
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        print("dask-cuda not installed: only distributed's LocalCluster")
        return made
    made += [("dask-cuda LocalCUDACluster", lambda: LocalCUDACluster(n_workers=1, threads_per_worker=1,
                                                                     dashboard_address=":0")),
             ("dask-cuda, device_memory_limit=0", lambda: LocalCUDACluster(
                 n_workers=1, threads_per_worker=1, dashboard_address=":0", device_memory_limit=0))]
    return made


def _partition(rows: int) -> ad.ArrowTable:
    from bench_dask import make_table

    return make_table(rows).select(["a", "b"]).to_device()


def in_process(rows: int, n: int) -> float:
    """Median ms of the task's pipeline in this process, on the same partition."""
    t = _partition(rows)
    times = []
    for run in range(n + 1):
        t0, t1, _ = piped(t, run)
        times.append((t1 - t0) * 1e3)
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", action="store_true", help="dask-cuda clusters and a device table argument")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--rows", type=int, default=100_000_000, help="rows of the device partition")
    args = parser.parse_args()
    if args.gpu:
        print(f"UDF pipeline in this process, {args.rows:,} rows: {in_process(args.rows, args.rounds):.2f} ms")
    print(f"{'cluster':36s} {'argument':14s} {'to start':>9s} {'task':>7s} {'back':>7s} {'whole ms':>9s}")
    for name, make in clusters(args.gpu):
        with make() as cluster, Client(cluster) as client:
            args_ = [("int", 1)]
            if args.gpu and "cuda" in name:
                table = client.submit(_partition, args.rows, pure=False)
                wait(table)
                args_ += [("device table", table), ("UDF pipeline", table)]
            for what, arg in args_:
                r = rounds(client, arg, args.rounds, piped if what == "UDF pipeline" else stamped)
                print(f"{name:36s} {what:14s} {r['to start']:9.2f} {r['task']:7.3f} {r['back']:7.2f} "
                      f"{r['whole']:9.2f}", flush=True)


if __name__ == "__main__":
    main()
