"""The end-to-end job of examples/scale_job.py on 1, 2, 4 GPUs, against the same job in dask-cudf, same cluster,
same data, same run.

    python3 benchmarks/bench_scale.py [--gpus 1 2 4] [--rows N] [--partitions P] [--data-dir DIR] [--repeats R]
        [--modes strong weak persisted] [--engines arrowdev peer] [--device-memory-limit L] [--protocol tcp|ucx]
        [--cpu] [--json [PATH]]

The dataset (benchmarks/scale_data.py): ``--rows`` rows in ``--partitions`` Parquet files of one row group each
(a partition each), ``id`` int64, ``x`` float64, ``s`` strings of 7-20 bytes, ``cat`` one of 20 names; written
once by several processes, reused when ``--data-dir`` already holds it.

The job (per partition): read, ``y = x * 2 + 1 if x > 0.5 else x - 1`` (a numeric UDF), ``shout = s.upper() +
"!"`` (new strings), ``hit = shout.startswith("A") and cat == "c07"`` (reading two string columns), then per
partition the rows, sum of y, count of x > 0.5, characters of shout, hits and sum of y over the hits, added up on
the client. The peer does the same with dask-cudf: ``dask_cudf.read_parquet``, ``Series.apply`` of the same numeric
UDF (cuDF compiles it; where it fails, the native expression ``(x * 2 + 1).where(x > 0.5, x - 1)``: the output
says which), ``Series.str.upper() + "!"``, ``str.startswith`` and ``==`` (native: cuDF's string UDFs take one
column), the same statistics. With ``--cpu`` the peer is dask.dataframe over pandas (a check of the code, on a
tiny dataset). The two results must be equal (counts exactly, sums to 1e-9).

Modes, on a cluster of N workers, one a GPU (dask-cuda's ``LocalCUDACluster`` with ``CUDA_VISIBLE_DEVICES`` the
first N GPUs; ``--cpu``: distributed's ``LocalCluster``, N worker processes):

- ``strong``: the whole dataset, read from disk to the result (speed-up = T(1) / T(N));
- ``weak``: ``partitions * N / max(--gpus)`` of the files, so that each worker has as many rows at every N
  (efficiency = T(1) / T(N));
- ``persisted``: the whole dataset read and persisted on the workers first (``load``, timed once), then the job
  on it; past ``--device-memory-limit`` dask-cuda spills partitions to host memory and back.

Per run it reports the share of the workers' time (wall x N) in tasks, in the worker's own handling of them
(distributed's ``executor`` and ``other`` metrics), in serialization, in ``sizeof`` (arrowdev's planning of a new
table; inside the task's time, measured by a timer wrapped around ``dask.sizeof`` on every worker) and idle
(waiting on the scheduler and the client: Dask's share), and per engine the fixed host cost of a task (the job
over a 10^4-row partition on the worker, median of 20). Medians over ``--repeats`` runs after warm-ups (the UDFs
compiled on every worker first). Results as JSON with ``--json`` (benchmarks/record.py); written after each GPU
count, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dask
from dask.utils import key_split
from distributed import Client, LocalCluster, futures_of, get_task_stream, wait

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import record  # noqa: E402
import scale_data  # noqa: E402  (puts examples/ on the path)
import scale_job  # noqa: E402

import arrowdev.dask as add  # noqa: E402

MODES = ("strong", "weak", "persisted")


# ---- the peer's job: dask-cudf (or dask.dataframe over pandas with --cpu) ---------------------------------


def peer_transform(df: Any, numeric: str) -> Any:
    """The job's three columns with the frame library's own methods (cuDF or pandas)."""
    x = df["x"]
    y = x.apply(scale_job.number_udf) if numeric == "apply" else (x * 2.0 + 1.0).where(x > 0.5, x - 1.0)
    shout = df["s"].str.upper() + "!"
    hit = shout.str.startswith("A") & (df["cat"] == "c07")
    return df.assign(y=y, shout=shout, hit=hit)


def peer_stats(df: Any) -> dict[str, Any]:
    return {"rows": len(df), "sum_y": float(df["y"].sum()), "positives": int((df["x"] > 0.5).sum()),
            "chars": int(df["shout"].str.len().sum()), "hits": int(df["hit"].sum()),
            "sum_y_hits": float(df["y"].where(df["hit"], 0.0).sum())}


def peer_graph(ddf: Any, numeric: str) -> list[Any]:
    meta = peer_transform(ddf._meta, "native")
    out = ddf.map_partitions(peer_transform, numeric, meta=meta)
    return [dask.delayed(peer_stats)(p) for p in out.to_delayed()]


def _peer_read(cpu: bool) -> Callable[..., Any]:
    if cpu:
        import dask.dataframe as dd

        return dd.read_parquet
    import dask_cudf

    return dask_cudf.read_parquet


def _frame_of_file(path: str, cpu: bool) -> Any:
    if cpu:
        import pandas as pd

        return pd.read_parquet(path, columns=scale_job.COLUMNS, dtype_backend="pyarrow")
    import cudf

    return cudf.read_parquet(path, columns=scale_job.COLUMNS)


# ---- on the workers ------------------------------------------------------------------------------------------


def _install_sizeof_timer(dask_worker: Any, classes: Sequence[str]) -> list[str]:
    """Wraps ``dask.sizeof`` of the named classes in a timer kept on the worker (distributed calls sizeof on
    every task's result, inside the task's time)."""
    import importlib

    from dask.sizeof import sizeof

    if not hasattr(dask_worker, "bench_sizeof"):
        dask_worker.bench_sizeof = [0.0, 0]
    timed = []
    for path in classes:
        module, name = path.rsplit(".", 1)
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        inner = sizeof.dispatch(cls)
        if getattr(inner, "bench_timer", False):
            continue

        def timer(obj: Any, inner: Callable[[Any], int] = inner, acc: list = dask_worker.bench_sizeof) -> int:
            t0 = time.perf_counter()
            n = inner(obj)
            acc[0] += time.perf_counter() - t0
            acc[1] += 1
            return n
        timer.bench_timer = True
        sizeof.register(cls)(timer)
        timed.append(path)
    return timed


def _import_path(path: str) -> None:
    if path not in sys.path:
        sys.path.insert(0, path)


def _counters(dask_worker: Any) -> dict[str, float]:
    """The worker's cumulative seconds by activity (distributed's ``digests_total``; tasks by prefix) and the
    sizeof timer's."""
    out: dict[str, float] = {}
    for key, value in list(dask_worker.digests_total.items()):
        if not isinstance(key, tuple) or key[-1] != "seconds" or not isinstance(value, (int, float)):
            continue
        name = f"execute|{key[2]}|{key[3]}" if key[0] == "execute" and len(key) == 5 else "|".join(map(str, key[:-1]))
        out[name] = out.get(name, 0.0) + value
    seconds, calls = getattr(dask_worker, "bench_sizeof", (0.0, 0))
    out["sizeof|seconds"], out["sizeof|calls"] = seconds, calls
    return out


def _release_memory() -> None:
    """Between engines: what one left cached on the GPU is given back, so the other can have it."""
    import gc

    gc.collect()
    with contextlib.suppress(Exception):
        from arrowdev.gpu import memory  # arrowdev/gpu/memory.py since the layers restructure

        if memory.in_use():
            memory.pool().free_all_blocks()
    with contextlib.suppress(Exception):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def _probe_arrowdev(path: str, gpu: bool, repeats: int = 20) -> tuple[float, float]:
    """Warm-up (UDFs compiled) and the job's fixed host cost over a 10^4-row partition already on this worker's
    GPU: median seconds of transform + stats, and of transform alone (three UDF calls and their appends: arrowdev's
    own calls, the statistics being mostly CuPy's reductions and their reads)."""
    import pyarrow.parquet as pq

    import arrowdev as ad

    t = ad.table(pq.read_table(path, columns=scale_job.COLUMNS))
    t = t.to_device() if gpu else t
    whole, udfs = [], []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        out = scale_job.transform(t)
        t1 = time.perf_counter()
        scale_job.partition_stats(out)
        whole.append(time.perf_counter() - t0)
        udfs.append(t1 - t0)
    return statistics.median(whole[1:]), statistics.median(udfs[1:])


def _probe_peer(path: str, cpu: bool, numeric: str, repeats: int = 20) -> float | str:
    """The same for the peer (its UDF compiled); the error as a string where ``numeric`` does not run."""
    try:
        df = _frame_of_file(path, cpu)
        times = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            peer_stats(peer_transform(df, numeric))
            times.append(time.perf_counter() - t0)
        return statistics.median(times[1:])
    except Exception as e:  # the peer's failure is reported, not the benchmark's
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _pinned_h2d_gbps(nbytes: int = 1 << 30) -> float:
    """The host link's ceiling on this worker's GPU: a copy from pinned memory, GB/s (best of 5)."""
    import cupy as cp
    import numpy as np

    mem = cp.cuda.alloc_pinned_memory(nbytes)
    host = np.frombuffer(mem, np.uint8, nbytes)
    dev = cp.empty(nbytes, cp.uint8)
    best = math.inf
    for _ in range(6):
        t0 = time.perf_counter()
        dev.set(host)
        cp.cuda.runtime.deviceSynchronize()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e9


# ---- the cluster and the timed runs ----------------------------------------------------------------------------


@contextlib.contextmanager
def cluster(n: int, args: argparse.Namespace) -> Iterator[Client]:
    """N workers, one thread each: one per GPU (the first N), or N CPU processes with ``--cpu``."""
    config: dict[str, Any] = {}
    if args.protocol == "ucx":
        from bench_dask import _ucx_config

        config = _ucx_config(not args.cpu, args.rmm_pool_size or 8 << 30)
    with dask.config.set(config):
        if args.cpu:
            made = LocalCluster(n_workers=n, processes=True, threads_per_worker=1, dashboard_address=":0",
                                protocol=args.protocol)
        else:
            from dask_cuda import LocalCUDACluster

            options: dict[str, Any] = {"memory_limit": args.memory_limit}
            if args.device_memory_limit is not None:
                options["device_memory_limit"] = args.device_memory_limit
            if args.rmm_pool_size is not None:
                options["rmm_pool_size"] = args.rmm_pool_size
            made = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, range(n))), n_workers=n,
                                    threads_per_worker=1, dashboard_address=":0", protocol=args.protocol, **options)
        with made, Client(made) as client:
            # the graph's functions travel by reference: the workers import scale_job from examples/ (spawned workers
            # inherit this sys.path; said again for any that did not). Not Client.upload_file: a module imported from a
            # worker's scratch folder has another file name in every cluster, and arrowdev's UDF cache keys on it
            client.run(_import_path, str(scale_data.EXAMPLES))
            client.run(_install_sizeof_timer, classes=["arrowdev.ArrowTable", "arrowdev.ArrowColumn",
                                                       "cudf.DataFrame", "cudf.Series", "pandas.DataFrame"])
            if not args.cpu and args.protocol == "ucx":
                import arrowdev as ad

                client.run(ad.cuda.use_rmm)  # docs/distributed.md: arrowdev's buffers where UCX maps them once
            yield client


def _breakdown(wall: float, workers: int, before: dict, after: dict, stream: list[dict],
               began: float | None = None) -> dict[str, Any]:
    """Where the workers' time (wall x workers) went in one run, and per task; with ``began`` (the run's start,
    ``time.time()``), how long the run waited for its first task and after its last, and each worker's busy
    time (unequal busy times: workers idle at the end waiting for the slowest)."""
    delta: dict[str, float] = {}
    for w, counters in after.items():
        for k, v in counters.items():
            delta[k] = delta.get(k, 0.0) + v - before.get(w, {}).get(k, 0.0)
    execute = {k: v for k, v in delta.items() if k.startswith("execute|")}
    task = sum(v for k, v in execute.items() if k.endswith(("|thread-cpu", "|thread-noncpu")))
    handling = sum(v for k, v in execute.items() if k.endswith(("|executor", "|other")))
    serial = sum(v for k, v in delta.items() if not k.startswith("execute|")
                 and any(word in k for word in ("serializ", "compress", "pickle")))
    sizeof = delta.get("sizeof|seconds", 0.0)
    capacity = wall * workers
    tasks = len(stream) or 1
    prefixes: dict[str, list[float]] = {}
    for rec in stream:
        seconds = sum(s["stop"] - s["start"] for s in rec.get("startstops", ()) if s.get("action") == "compute")
        prefixes.setdefault(key_split(rec["key"]), []).append(seconds)
    edges: dict[str, float] = {}
    spans = [s for rec in stream for s in rec.get("startstops", ()) if s.get("action") == "compute"]
    if began is not None and spans:
        edges = {"first_task_ms": 1e3 * (min(s["start"] for s in spans) - began),
                 "after_last_task_ms": 1e3 * (began + wall - max(s["stop"] for s in spans))}
    busy: dict[str, float] = {}
    for rec in stream:
        for s in rec.get("startstops", ()):
            if s.get("action") == "compute":
                busy[rec.get("worker", "?")] = busy.get(rec.get("worker", "?"), 0.0) + s["stop"] - s["start"]
    edges["busy_ms_by_worker"] = sorted(1e3 * v for v in busy.values())
    return {**edges, "tasks": len(stream), "task_ms": 1e3 * task / tasks, "handling_ms": 1e3 * handling / tasks,
            "serialize_ms": 1e3 * serial / tasks, "sizeof_ms": 1e3 * sizeof / tasks,
            "share_task": task / capacity, "share_handling": handling / capacity, "share_serialize": serial / capacity,
            "share_sizeof": sizeof / capacity, "share_idle": max(0.0, 1 - (task + handling + serial) / capacity),
            "task_ms_by_prefix": {p: 1e3 * statistics.median(v) for p, v in prefixes.items()}}


def timed_runs(client: Client, run: Callable[[], dict[str, Any]], repeats: int, workers: int,
               warm: bool = False) -> tuple[list[float], dict[str, Any], dict[str, Any]]:
    """(seconds of each run, the last run's result, the median run's breakdown); ``warm``: one untimed run first."""
    if warm:
        run()
    seconds, breakdowns, result = [], [], {}
    for _ in range(repeats):
        before = client.run(_counters)
        with get_task_stream(client) as ts:
            began = time.time()
            t0 = time.perf_counter()
            result = run()
            seconds.append(time.perf_counter() - t0)
        breakdowns.append(_breakdown(seconds[-1], workers, before, client.run(_counters), ts.data, began))
    median = sorted(range(len(seconds)), key=seconds.__getitem__)[len(seconds) // 2]
    return seconds, result, breakdowns[median]


class Engine:
    """One engine's job on the cluster: read to result from files, or over persisted partitions."""

    def __init__(self, name: str, args: argparse.Namespace, numeric: str = "") -> None:
        self.name, self.args, self.numeric = name, args, numeric
        self.label = name if name == "arrowdev" else "dask-pandas" if args.cpu else "dask-cudf"

    def collection(self, files: list[str]) -> Any:
        if self.name == "arrowdev":
            # --partitioning files: a partition a file (the same partitions at every GPU count); auto: arrowdev's rule
            rows = None if self.args.partitioning == "auto" else self.args.rows_per_file
            return add.read_parquet(files, columns=scale_job.COLUMNS, device=None if self.args.cpu else "cuda",
                                    rows_per_partition=rows, engine=self.args.engine)
        return _peer_read(self.args.cpu)(files, columns=scale_job.COLUMNS)

    def graph(self, parts: Any) -> list[Any]:
        return scale_job.job_graph(parts) if self.name == "arrowdev" else peer_graph(parts, self.numeric)

    def run(self, parts: Any) -> dict[str, Any]:
        return scale_job.combine(dask.compute(*self.graph(parts)))


def values_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Counts equal, sums within 1e-9 (relative: the peer adds in another order)."""
    return all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-9) if k.startswith("sum") else a[k] == b[k]
               for k in a if k in b) and a.keys() == b.keys()


def _row(engine: Engine, mode: str, n: int, files: list[str], parts: Any, seconds: list[float],
         result: dict[str, Any], breakdown: dict[str, Any], bytes_per_row: float) -> dict[str, Any]:
    median = statistics.median(seconds)
    rows = int(result.get("rows", 0))
    return {"engine": engine.label, "mode": mode, "gpus": n, "rows": rows, "files": len(files),
            "partitions": parts.npartitions, "seconds": median, "seconds_min": min(seconds), "seconds_all": seconds,
            "rows_per_s": rows / median, "gb_per_s": rows * bytes_per_row / median / 1e9, **breakdown,
            "result": result}


def measure(client: Client, engine: Engine, mode: str, files: list[str], n: int, args: argparse.Namespace,
            bytes_per_row: float) -> list[dict[str, Any]]:
    """The rows of one engine and mode on this cluster."""
    if mode != "persisted":
        parts = engine.collection(files)
        seconds, result, breakdown = timed_runs(client, lambda: engine.run(engine.collection(files)), args.repeats, n)
        return [_row(engine, mode, n, files, parts, seconds, result, breakdown, bytes_per_row)]
    before = client.run(_counters)
    with get_task_stream(client) as ts:
        t0 = time.perf_counter()
        parts = engine.collection(files).persist()
        wait(parts)
        load = time.perf_counter() - t0
    load_breakdown = _breakdown(load, n, before, client.run(_counters), ts.data)
    keys = [f.key for f in futures_of(parts)]
    held = sum(client.nbytes(keys=keys, summary=False).values())
    seconds, result, breakdown = timed_runs(client, lambda: engine.run(parts), args.repeats, n)
    out = [_row(engine, "load", n, files, parts, [load], {"rows": result.get("rows", 0)}, load_breakdown,
                bytes_per_row),
           _row(engine, "persisted", n, files, parts, seconds, result, breakdown, bytes_per_row)]
    out[1]["bytes_held"] = held
    client.cancel(parts)
    del parts
    return out


def derive(rows: list[dict[str, Any]], references: dict[int, dict[str, Any]]) -> None:
    """Speed-up against the fewest GPUs, weak efficiency, the peer's time over arrowdev's, equality."""
    def find(engine: str, mode: str, gpus: int) -> dict[str, Any] | None:
        return next((r for r in rows if (r["engine"], r["mode"], r["gpus"]) == (engine, mode, gpus)), None)

    for r in rows:
        base = min((x for x in rows if (x["engine"], x["mode"]) == (r["engine"], r["mode"])), key=lambda x: x["gpus"])
        ratio = base["seconds"] / r["seconds"]
        if r["mode"] == "weak":
            r["efficiency"] = ratio
        else:
            r["speedup"] = ratio
            r["efficiency"] = ratio * base["gpus"] / r["gpus"]
        if r["engine"] == "arrowdev":
            peer = next((x for x in rows if x["engine"] != "arrowdev" and (x["mode"], x["gpus"]) == (r["mode"], r["gpus"])),
                        None)
            r["peer_over_arrowdev"] = peer["seconds"] / r["seconds"] if peer else None
        if r["mode"] != "load":
            ref = references.setdefault(r["files"], r["result"])
            r["equal"] = values_equal(r["result"], ref)


def print_table(rows: list[dict[str, Any]], peer: str) -> None:
    print(f"\n{'engine':<11} {'mode':<9} {'GPUs':>4} {'rows':>13} {'parts':>5} {'seconds':>8} {'M rows/s':>9} "
          f"{'GB/s':>6} {peer + '/ad':>14} {'speed-up':>8} {'effic.':>6} | share: {'task':>5} {'handl':>5} "
          f"{'ser':>5} {'sizeof':>6} {'idle':>5} | ms/task: {'task':>7} {'sizeof':>6} {'host':>6} {'equal':>5}")
    for r in rows:
        def f(key: str, fmt: str, scale: float = 1.0) -> str:
            v = r.get(key)
            return format(v * scale, fmt) if isinstance(v, (int, float)) else format("-", fmt.rsplit(".", 1)[0])
        print(f"{r['engine']:<11} {r['mode']:<9} {r['gpus']:>4} {r['rows']:>13,} {r['partitions']:>5} "
              f"{r['seconds']:>8.3f} {r['rows_per_s'] / 1e6:>9.1f} {r['gb_per_s']:>6.2f} {f('peer_over_arrowdev', '>14.2f')} "
              f"{f('speedup', '>8.2f')} {f('efficiency', '>6.2f')} | {f('share_task', '>12.2f')} "
              f"{f('share_handling', '>5.2f')} {f('share_serialize', '>5.2f')} {f('share_sizeof', '>6.3f')} "
              f"{f('share_idle', '>5.2f')} | {f('task_ms', '>16.2f')} {f('sizeof_ms', '>6.3f')} "
              f"{f('host_ms_per_task', '>6.2f')} {str(r.get('equal', '-')):>5}", flush=True)
    print("\nwhere the idle time is: ms from a run's start to its first task, after its last task, "
          "each worker's busy ms")
    for r in rows:
        if "first_task_ms" in r:
            print(f"{r['engine']:<11} {r['mode']:<9} {r['gpus']:>4}  first task {r['first_task_ms']:7.1f}  after last "
                  f"{r['after_last_task_ms']:7.1f}  busy " + " ".join(f"{b:.0f}" for b in r["busy_ms_by_worker"]))


def _peer_available(args: argparse.Namespace) -> bool:
    if args.cpu:
        return True
    try:
        import cudf  # noqa: F401
        import dask_cudf  # noqa: F401
    except ImportError as e:
        print(f"dask-cudf: not importable ({e}): the peer's job is skipped, arrowdev runs alone", flush=True)
        return False
    return True


def _warm_engines(client: Client, engines: list[Engine], warm: str, args: argparse.Namespace) -> dict[str, float]:
    """Compiles every engine's UDFs on every worker and measures its fixed host cost per task (ms). Picks the
    peer's numeric UDF: ``Series.apply`` where it runs on every worker, else the native expression."""
    host_ms = {}
    for engine in engines:
        if engine.name == "arrowdev":
            both = client.run(_probe_arrowdev, warm, not args.cpu)
            got = {w: v[0] for w, v in both.items()}
            host_ms["arrowdev transform"] = 1e3 * statistics.median(v[1] for v in both.values())
        else:
            got = client.run(_probe_peer, warm, args.cpu, "apply")
            failed = [v for v in got.values() if isinstance(v, str)]
            engine.numeric = "native" if failed else "apply"
            if failed:
                print(f"{engine.label}: Series.apply of the numeric UDF failed ({failed[0]}); the native expression "
                      "(x * 2 + 1).where(x > 0.5, x - 1) is used instead", flush=True)
                got = client.run(_probe_peer, warm, args.cpu, "native")
            bad = [v for v in got.values() if isinstance(v, str)]
            if bad:
                raise RuntimeError(f"{engine.label}'s job fails on the workers: {bad[0]}")
        host_ms[engine.label] = 1e3 * statistics.median(got.values())
    return host_ms


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, nargs="+", default=None, help="worker (GPU) counts (default 1 2 4; CPU 1 2)")
    parser.add_argument("--rows", type=int, default=None, help="rows of the whole dataset (default 4*10^8; CPU 2*10^5)")
    parser.add_argument("--partitions", type=int, default=None, help="files = partitions (default 16; CPU 8)")
    parser.add_argument("--row-group-rows", type=int, default=None, help="rows a row group (default: a file's rows)")
    parser.add_argument("--data-dir", default=None, help="where the dataset is (default /tmp/arrowdev-scale/ROWSxP)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--partitioning", default="files", choices=["files", "auto"],
                        help="arrowdev's partitions: a file each (default), or read_parquet's own rule")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["strong", "weak"], choices=MODES)
    parser.add_argument("--engines", nargs="+", default=["arrowdev", "peer"], choices=["arrowdev", "peer"])
    parser.add_argument("--device-memory-limit", default=None, help="dask-cuda's spilling threshold per worker")
    parser.add_argument("--memory-limit", default="100GB", help="host memory per worker (GPU clusters)")
    parser.add_argument("--rmm-pool-size", default=None, help="an RMM pool per worker (dask-cuda's rmm_pool_size)")
    parser.add_argument("--protocol", default="tcp", choices=["tcp", "ucx"])
    parser.add_argument("--kvikio-threads", type=int, default=None,
                        help="KVIKIO_NTHREADS for every worker, both engines (default: unset; arrowdev's reader then "
                             "takes 8, dask-cudf KvikIO's 1)")
    parser.add_argument("--engine", default="auto", choices=["auto", "cudf", "pyarrow"],
                        help="arrowdev's Parquet decoding: libcudf on the GPU where installed (auto), or PyArrow")
    parser.add_argument("--cpu", action="store_true", help="CPU workers and dask.dataframe over pandas as the peer")
    parser.add_argument("--check", action="store_true", help="also run the job in this process, for the reference "
                        "(default with --cpu)")
    parser.add_argument("--generate-only", action="store_true", help="write the dataset (unless there) and stop")
    record.add_json_option(parser, "bench_scale")
    args = parser.parse_args(argv)
    gpus = sorted(set(args.gpus or ([1, 2] if args.cpu else [1, 2, 4])))
    rows = args.rows or (200_000 if args.cpu else 400_000_000)
    partitions = args.partitions or (8 if args.cpu else 16)
    if partitions % max(gpus):
        parser.error(f"expected --partitions divisible by the most GPUs ({max(gpus)}) for weak scaling, got {partitions}")
    args.rows_per_file = rows // partitions
    if args.kvikio_threads is not None:  # the workers inherit this process's environment
        os.environ["KVIKIO_NTHREADS"] = str(args.kvikio_threads)
    data_dir = args.data_dir or os.path.join("/tmp/arrowdev-scale", f"{rows}x{partitions}")
    print(f"bench_scale: Python {platform.python_version()}, {'CPU workers' if args.cpu else 'GPU workers'}, "
          f"{args.protocol}, GPUs {gpus}, {rows:,} rows in {partitions} partitions", flush=True)
    print(f"arrowdev's Parquet decoding: engine={args.engine!r} (auto: libcudf on the GPU where pylibcudf is "
          f"installed)", flush=True)
    files = scale_data.ensure(data_dir, rows, partitions, args.row_group_rows, args.seed)
    warm = scale_data.warmup_file(data_dir)
    if args.generate_only:
        return []
    import pyarrow.parquet as pq

    bytes_per_row = pq.read_table(warm).nbytes / pq.ParquetFile(warm).metadata.num_rows
    engines = [Engine(e, args) for e in args.engines if e == "arrowdev" or _peer_available(args)]
    references: dict[int, dict[str, Any]] = {}
    if args.check or args.cpu:
        for k in sorted({len(files)} | {partitions * n // max(gpus) for n in gpus}):
            references[k] = scale_job.run_in_process(files[:k])
    out: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    extra = {"gpus": gpus, "dataset_rows": rows, "partitions": partitions, "bytes_per_row": bytes_per_row,
             "protocol": args.protocol, "device_memory_limit": args.device_memory_limit,
             "partitioning": args.partitioning, "arrowdev_engine": args.engine,
             "kvikio_threads": args.kvikio_threads}
    for n in gpus:
        with cluster(n, args) as client:
            host_ms = _warm_engines(client, engines, warm, args)
            if "arrowdev" in host_ms:
                print(f"{n} workers: the job's host cost a task (10^4 rows) arrowdev {host_ms['arrowdev']:.2f} ms, of "
                      f"which its three UDF calls and appends {host_ms['arrowdev transform']:.2f} ms", flush=True)
            link = None
            if "persisted" in args.modes and not args.cpu:
                link = statistics.median(client.run(_pinned_h2d_gbps).values())
            for engine in engines:
                for mode in args.modes:
                    chosen = files if mode != "weak" else files[:partitions * n // max(gpus)]
                    same = [r for r in out if (r["engine"], r["mode"], r["gpus"]) == (engine.label, "strong", n)]
                    if mode == "weak" and len(chosen) == len(files) and same:  # the strong run's data: not again
                        got = [{**same[0], "mode": "weak"}]
                    else:
                        try:
                            got = measure(client, engine, mode, chosen, n, args, bytes_per_row)
                        except Exception as e:  # one engine's failure (out of memory) is reported, the rest goes on
                            first = str(e).splitlines()[0][:300] if str(e) else ""
                            failures.append({"engine": engine.label, "mode": mode, "gpus": n,
                                             "error": f"{type(e).__name__}: {first}"})
                            print(f"{engine.label} {mode} on {n} GPUs failed: {failures[-1]['error']}", flush=True)
                            client.run(_release_memory)
                            continue
                    for r in got:
                        r["host_ms_per_task"] = host_ms[engine.label]
                        if engine.name == "arrowdev":
                            r["host_ms_transform"] = host_ms["arrowdev transform"]
                        r["numeric"] = engine.numeric or "arrowdev UDF"
                        if link:
                            r["host_link_gbps"] = link
                    out.extend(got)
                    client.run(_release_memory)
        # after each GPU count: a run cut short keeps what it measured
        derive(out, dict(references))
        print_table(out, "dask-pandas" if args.cpu else "dask-cudf")
        machine = "CPU: " + platform.node() if args.cpu else _gpu_name()
        record.write(args.json, "bench_scale", machine, out, **extra, failures=failures)
    return out


def _gpu_name() -> str:
    try:
        import cupy as cp

        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name
        return f"{cp.cuda.runtime.getDeviceCount()} x {name}"
    except Exception:  # only a label
        return "GPU"


if __name__ == "__main__":
    main()
