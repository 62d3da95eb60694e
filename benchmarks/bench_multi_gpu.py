"""Dask over several GPUs: scaling of bench_dask's UDF pipeline, partitions moved GPU to GPU, peer copies.

    python3 benchmarks/bench_multi_gpu.py [--rows N] [--repeats R] [--protocol tcp ucx] [--parts scaling move peer]
                                          [--cpu]

1. Scaling. One worker per GPU (dask-cuda's ``LocalCUDACluster``; ``--cpu``: distributed's ``LocalCluster``, one
   process a worker), partitions of ``--rows`` rows of two float64 columns made and persisted on the workers' GPUs
   first, then the pipeline (append ``y = f(a, b)``) over them. Strong: the same P partitions (P = the most
   workers) over 1..N workers, efficiency T_1 / (N T_N). Weak: N partitions over N workers, efficiency T_1 / T_N.
   Scheduler-overhead fraction: 1 - (UDF time per worker) / wall time, the UDF's time from CUDA events around each
   partition's pipeline on its worker. Medians over repeats.
2. A partition moved between two workers on different GPUs (a task on worker B that needs the data on worker A)
   against a CuPy array of the same bytes over the same comm (ratio = CuPy time / arrowdev time), per protocol.
3. ``to_device(1)`` of a table on GPU 0 against ``cudaMemcpyPeerAsync`` of the same bytes in one piece.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import dask
import numpy as np
from distributed import Client, LocalCluster, wait

import arrowdev as ad
import arrowdev.dask as add

sys.path.insert(0, os.path.dirname(__file__))
from bench_dask import _made_on_the_worker, _median_time, _move_times, _ucx_config, pipeline  # noqa: E402


def make_partition(seed: int, rows: int, gpu: bool, tag: str = "") -> ad.ArrowTable:
    """Two float64 columns of ``rows`` random values, made where the task runs (on a GPU with CuPy); ``tag``
    tells Dask's keys of one measurement from another's."""
    if gpu:
        import cupy as cp

        rng = cp.random.default_rng(seed)
        columns = {"a": rng.random(rows), "b": rng.random(rows)}
        cp.cuda.runtime.deviceSynchronize()
    else:
        rng = np.random.default_rng(seed)
        columns = {"a": rng.random(rows), "b": rng.random(rows)}
    return ad.table({name: ad.column(values) for name, values in columns.items()})


def _udf_seconds(worker: Any) -> list[float]:
    """The pipeline's own time per partition on ``worker`` (CUDA events on a GPU), kept on the worker object:
    functions of this script travel by value, so a module-level list would not be the worker's."""
    if not hasattr(worker, "bench_udf_seconds"):
        worker.bench_udf_seconds = []
    return worker.bench_udf_seconds


def timed_pipeline(t: ad.ArrowTable) -> ad.ArrowTable:
    """bench_dask's pipeline, its own time noted on the worker."""
    from distributed import get_worker

    if t.device.type != "cuda":
        t0 = time.perf_counter()
        out = pipeline(t)
        _udf_seconds(get_worker()).append(time.perf_counter() - t0)
        return out
    import cupy as cp

    stream = ad.cuda.runtime.stream_for(t.device.id)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    out = pipeline(t)
    end.record(stream)
    end.synchronize()
    _udf_seconds(get_worker()).append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return out


def _take_udf_seconds(dask_worker: Any) -> list[float]:
    taken = list(_udf_seconds(dask_worker))
    _udf_seconds(dask_worker).clear()
    return taken


@contextlib.contextmanager
def _cluster(workers: int, gpu: bool, protocol: str, pool_bytes: int = 24 << 30) -> Any:
    config = _ucx_config(gpu, pool_bytes) if protocol == "ucx" else {}
    with dask.config.set(config):
        if not gpu:
            cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=":0",
                                   protocol=protocol)
        else:
            from dask_cuda import LocalCUDACluster

            # the GPU machines start with little host memory and grow it (KINDS.md): a limit from MemTotal would
            # be too small, so the workers get a fixed one
            cluster = LocalCUDACluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0",
                                       protocol=protocol, memory_limit="48GB")
        with cluster:
            yield cluster


def _pipeline_times(client: Client, partitions: int, rows: int, gpu: bool, repeats: int,
                    tag: str) -> tuple[float, float]:
    """(median wall seconds, median UDF seconds per worker) of the pipeline over ``partitions`` partitions
    persisted on the cluster's workers."""
    parts = add.from_map(make_partition, list(range(partitions)), rows=rows, gpu=gpu, tag=tag).persist()
    wait(parts)
    runs = iter(range(10**6))
    per_worker: list[float] = []

    def once() -> None:
        client.run(_take_udf_seconds)
        out = parts.map_partitions(lambda t, run: timed_pipeline(t), next(runs)).persist()
        wait(out)
        client.cancel(out)
        busy = [sum(seconds) for seconds in client.run(_take_udf_seconds).values()]
        per_worker.append(max(busy))
    wall = _median_time(once, repeats)
    client.cancel(parts)
    return wall, statistics.median(per_worker)


def bench_scaling(rows: int, repeats: int, gpu: bool, protocol: str, most: int) -> None:
    strong: dict[int, tuple[float, float]] = {}
    weak: dict[int, tuple[float, float]] = {}
    for workers in range(1, most + 1):
        with _cluster(workers, gpu, protocol) as cluster, Client(cluster) as client:
            strong[workers] = _pipeline_times(client, most, rows, gpu, repeats, "strong")
            weak[workers] = _pipeline_times(client, workers, rows, gpu, repeats, "weak")
    print(f"1. UDF pipeline scaling ({'GPU' if gpu else 'CPU'}, {protocol}), {rows:,} rows a partition:")
    for name, times, partitions in (("strong", strong, lambda n: most), ("weak", weak, lambda n: n)):
        for n, (wall, udf) in times.items():
            efficiency = times[1][0] / (n * wall) if name == "strong" else times[1][0] / wall
            rate = partitions(n) * rows / wall
            print(f"   {name}: {n} worker(s), {partitions(n)} partition(s): {wall * 1e3:.1f} ms, {rate / 1e9:.2f} G rows/s, "
                  f"efficiency {efficiency:.2f}, UDF {udf * 1e3:.2f} ms a worker, scheduler-overhead fraction "
                  f"{1 - udf / wall:.2f}")


def bench_move(rows: int, repeats: int, gpu: bool, protocol: str) -> None:
    with _cluster(2, gpu, protocol) as cluster, Client(cluster) as client:
        if gpu and protocol == "ucx":  # docs/distributed.md: arrowdev's buffers from the RMM pool UCX maps once
            client.run(ad.cuda.use_rmm)
        a, b = sorted(client.scheduler_info()["workers"])
        table = make_partition(0, rows, gpu)
        nbytes = add.nbytes(table)
        if gpu:
            import cupy as cp

            peer = lambda: cp.random.randint(0, 255, nbytes, dtype=cp.uint8)  # noqa: E731
        else:
            peer = lambda: np.random.default_rng().integers(0, 255, nbytes, dtype=np.uint8)  # noqa: E731
        makers: list[tuple[Callable[[], Any], Callable | None]] = [
            (lambda: table.slice(0), None), (peer, None), (lambda: table.slice(0), _made_on_the_worker)]
        (t_table, best), (t_peer, best_peer), (t_made, best_made) = _move_times(client, makers, a, b, repeats)
        devices = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES", "-"))
    print(f"2. a {nbytes / 1e6:.0f} MB partition moved between two workers ({protocol}; CUDA_VISIBLE_DEVICES "
          f"{devices[a]} -> {devices[b]}): arrowdev {t_table * 1e3:.1f} ms (fastest {best * 1e3:.1f}), "
          f"{'CuPy' if gpu else 'NumPy'} {t_peer * 1e3:.1f} ms (fastest {best_peer * 1e3:.1f}), ratio "
          f"{t_peer / t_table:.2f}; made on the sending worker {t_made * 1e3:.1f} ms, ratio {t_peer / t_made:.2f}")


def bench_peer(rows: int, repeats: int) -> None:
    import cupy as cp

    with cp.cuda.Device(0):
        table = make_partition(0, rows, True)
    nbytes = add.nbytes(table)
    with cp.cuda.Device(0):
        source = cp.empty(nbytes, dtype=cp.uint8)
    with cp.cuda.Device(1):
        target = cp.empty(nbytes, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)

    def to_device() -> None:
        moved = table.to_device(1)
        with cp.cuda.Device(1):
            for col in moved.columns:
                col.to_cupy()  # CuPy's view orders its stream after the copy's event
            cp.cuda.runtime.deviceSynchronize()

    def peer_copy() -> None:
        cp.cuda.runtime.memcpyPeerAsync(target.data.ptr, 1, source.data.ptr, 0, nbytes, stream.ptr)
        stream.synchronize()
    ad.cuda.runtime.enable_peer_access(0, 1)  # as to_device does: both copies GPU to GPU where they can
    ours, theirs = _median_time(to_device, repeats), _median_time(peer_copy, repeats)
    print(f"3. to_device(1) of a {nbytes / 1e6:.0f} MB table on GPU 0: {ours * 1e3:.2f} ms ({nbytes / ours / 1e9:.0f} GB/s), "
          f"cudaMemcpyPeerAsync of the same bytes {theirs * 1e3:.2f} ms ({nbytes / theirs / 1e9:.0f} GB/s): "
          f"ratio {theirs / ours:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--protocol", nargs="+", default=["tcp"], choices=["tcp", "ucx"])
    parser.add_argument("--parts", nargs="+", default=["scaling", "move", "peer"], choices=["scaling", "move", "peer"])
    parser.add_argument("--cpu", action="store_true", help="CPU workers (a check of the benchmark without GPUs)")
    parser.add_argument("--workers", type=int, default=0, help="the most workers (default: one per GPU, or 2)")
    args = parser.parse_args()
    # the workers import bench_dask (the pipeline) by name: they start with this folder on their path
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    gpu = not args.cpu
    most = args.workers
    if not most:
        most = ad.cuda.runtime.cupy().cuda.runtime.getDeviceCount() if gpu else 2
    print(f"arrowdev {ad.__version__}, Python {platform.python_version()}, {most} worker(s) at most", flush=True)
    for protocol in args.protocol:
        if "scaling" in args.parts:
            bench_scaling(args.rows, args.repeats, gpu, protocol, most)
        if "move" in args.parts:
            bench_move(args.rows, args.repeats, gpu, protocol)
    if "peer" in args.parts and gpu:
        bench_peer(args.rows, args.repeats)


if __name__ == "__main__":
    main()
