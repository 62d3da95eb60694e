"""arrowdev on Dask: what serialization, moves between workers and UDF pipelines cost, as ratios.

    python3 benchmarks/bench_dask.py [--gpu] [--rows N] [--repeats N] [--parts 1 2 3] [--protocol tcp|ucx]

1. serialize + deserialize. Per table size: the ``dask`` family's serialize and deserialize alone
   (zero-copy frames: the goal is < 1 ms at any size), and the round trip as a transport makes it
   (serialize, one copy of every frame into a buffer of the transport's, deserialize over those) against
   the raw copy of the same bytes into the same buffers (ratio = raw copy time / round trip time; goal
   >= 0.9). Fastest of the repeats: a busy machine only slows copies down.
2. A partition moved between two workers of one ``LocalCluster`` against a NumPy array of the
   same bytes over the same comm (a task on worker B that needs the data on worker A; ratio = NumPy
   time / arrowdev time; goal >= 0.9). With ``--gpu``: partitions on the GPU against a CuPy array, two
   worker processes on GPU 0 (distributed's LocalCluster: dask-cuda will not start two workers on one GPU).
   ``--protocol tcp`` (default): distributed's ``dask`` family, host frames (GPU data through pinned
   memory). ``--protocol ucx`` (needs distributed-ucxx): the ``cuda`` family, device frames moved GPU to
   GPU by UCX (transports tcp, cuda_copy, cuda_ipc; an RMM pool in each process, as dask-cuda advises).
   The arrowdev table is timed twice: as scattered to worker A (its buffers where the frames it arrived in
   put them: back to back, sent on as one frame), and as a copy made on worker A (each column in an
   allocation of its own: sent as a frame per column; its first send plans the table), the latter also
   against a NumPy / CuPy array copied on worker A (memory made there, as the table's is).
3. The UDF pipeline (append ``y = f(a, b)``) on a 1-worker cluster, the partition already on the
   worker, against the same call in process (ratio = in-process time / cluster time; goal >= 0.9). Also
   timed: a task that only returns its partition, through the collection and through a bare
   ``client.submit`` (distributed's own fixed cost of a task, which bounds the ratio when the UDF is fast).
   Rounds are timed back to back, and again each after 30 ms of rest: distributed's client sends its
   messages to the scheduler in batches at most every 10 ms, so a round started right after the last
   waits out that window, and one started on an idle cluster does not.

Medians over repeats; the first call of each kind (UDF compilation, connections) is not timed.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from typing import Any, Callable

import dask
import numpy as np
import pyarrow as pa
from distributed import Client, LocalCluster, futures_of, wait
from distributed.protocol import deserialize, serialize

import arrowdev as ad
import arrowdev.dask as add


def _median_time(fn: Callable[[], Any], repeats: int, idle: float = 0.0) -> float:
    """Median time of ``fn`` over ``repeats`` calls, each after ``idle`` seconds of rest (untimed)."""
    fn()
    times = []
    for _ in range(repeats):
        time.sleep(idle)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _best_time(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` calls: for the copies of part 1, which a busy machine only slows."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def make_table(rows: int, seed: int = 0) -> ad.ArrowTable:
    rng = np.random.default_rng(seed)
    return ad.table({"a": pa.array(rng.random(rows), mask=rng.random(rows) < 0.01),
                     "b": pa.array(rng.random(rows)),
                     "s": pa.array(np.char.add("k", (np.arange(rows) % 1000).astype(str)))})


def udf(a, b):
    return a * 2.0 + b if a > b else b - a


def pipeline(t: ad.ArrowTable) -> ad.ArrowTable:
    return t.append_column("y", t.apply(udf, columns=["a", "b"]))


def bench_serialize(sizes: list[int], repeats: int) -> None:
    print("1. serialize + deserialize (dask family, host frames)")
    print(f"{'rows':>12} {'MB':>9} {'ser us':>9} {'deser us':>9} {'round trip ms':>14} {'raw copy ms':>12} {'ratio':>6}")
    for rows in sizes:
        tbl = make_table(rows)
        header, frames = serialize(tbl, serializers=("dask",))
        nbytes = sum(memoryview(f).nbytes for f in frames)
        t_ser = _median_time(lambda: serialize(tbl, serializers=("dask",)), repeats)
        t_de = _median_time(lambda: deserialize(header, frames), repeats)

        # what a transport does with the frames: copy each into its own (here: preallocated) buffer
        landing = [np.empty(memoryview(f).nbytes, np.uint8) for f in frames]

        def copy_frames(fs: list[Any]) -> None:
            for dst, f in zip(landing, fs):
                np.copyto(dst, np.frombuffer(f, np.uint8))

        def round_trip() -> Any:
            h, fs = serialize(tbl, serializers=("dask",))
            copy_frames(fs)
            return deserialize(h, landing)

        t_rt = _best_time(round_trip, 3 * repeats)
        t_raw = _best_time(lambda: copy_frames(frames), 3 * repeats)
        print(f"{rows:>12,} {nbytes / 1e6:>9.2f} {t_ser * 1e6:>9.1f} {t_de * 1e6:>9.1f} {t_rt * 1e3:>14.3f} "
              f"{t_raw * 1e3:>12.3f} {t_raw / t_rt:>6.2f}")


def _made_on_the_worker(t: ad.ArrowTable) -> ad.ArrowTable:
    """A copy of ``t`` made where it is, in buffers of their own (as a worker's own computation leaves it),
    finished before the task ends (else the timed move would wait for the rest of the copy)."""
    if t.device.type != "cuda":
        return ad.table(t.to_pyarrow())
    made = t.to_host().to_device()
    ad.cuda.runtime.cupy().cuda.runtime.deviceSynchronize()
    return made


def _peer_copied_on_the_worker(array: Any) -> Any:
    """A copy of a NumPy / CuPy array made where it is (the peer of _made_on_the_worker), finished before
    the task ends."""
    copied = array.copy()
    if not isinstance(copied, np.ndarray):
        ad.cuda.runtime.cupy().cuda.runtime.deviceSynchronize()
    return copied


def _move_times(client: Client, makers: list[tuple[Callable[[], Any], Callable | None]], source: str, target: str,
                repeats: int) -> list[tuple[float, float]]:
    """Per (maker, function run on ``source`` first or None), (median, fastest) time of a task on ``target``
    that needs data scattered to ``source`` (fresh data each time; the makers take turns, so a busy machine
    slows them alike; the first round, which opens the connection between the workers, is not counted)."""
    times: list[list[float]] = [[] for _ in makers]
    for i in range(repeats + 1):
        for k, (make, on_source) in enumerate(makers):
            [future] = client.scatter([make()], workers=[source], hash=False)
            if on_source is not None:
                future = client.submit(on_source, future, workers=[source], pure=False)
            wait(future)
            t0 = time.perf_counter()
            client.submit(len, future, workers=[target], pure=False).result()
            if i:
                times[k].append(time.perf_counter() - t0)
            del future
    return [(statistics.median(t), min(t)) for t in times]


def _ucx_config(gpu: bool, pool_bytes: int) -> dict[str, Any]:
    """distributed-ucxx's options (its schema, distributed-ucxx.yaml; what dask-cuda's enable_tcp_over_ucx
    and enable_nvlink set): UCX over TCP, and for GPU data cuda_copy and cuda_ipc, a CUDA context made
    before UCX starts, and an RMM pool (UCX receives into RMM buffers, and maps each allocation it sends
    from once: a pool keeps that to one mapping)."""
    if not gpu:
        return {"distributed-ucxx.tcp": True}
    return {"distributed-ucxx.tcp": True, "distributed-ucxx.cuda-copy": True, "distributed-ucxx.nvlink": True,
            "distributed-ucxx.create-cuda-context": True, "distributed-ucxx.rmm.pool-size": pool_bytes}


def _ucx_transports() -> list[str]:
    import ucxx

    return sorted(ucxx.get_active_transports())


def bench_move(rows: int, repeats: int, gpu: bool, protocol: str) -> None:
    tbl = make_table(rows)
    nbytes = add.nbytes(tbl)
    # two worker processes (on GPU 0 with --gpu: dask-cuda's LocalCUDACluster refuses one device twice,
    # "Can not scale beyond visible devices", dask-cuda 26.10, so distributed's own cluster)
    pool_bytes = -(-3 * nbytes // 2**20) * 2**20  # RMM wants a multiple of 256 bytes
    config = _ucx_config(gpu, pool_bytes) if protocol == "ucx" else {}
    with dask.config.set(config), LocalCluster(protocol=protocol, n_workers=2, processes=True, threads_per_worker=1,
                                               dashboard_address=":0") as cluster, Client(cluster) as client:
        if gpu:
            import cupy as cp

            tbl = tbl.to_device()
            make_peer = lambda: cp.random.randint(0, 255, nbytes, dtype=cp.uint8)  # noqa: E731
        else:
            make_peer = lambda: np.random.default_rng().integers(0, 255, nbytes, dtype=np.uint8)  # noqa: E731
        # a table as received from elsewhere (its buffers in the frames it came in), one made on the worker
        makers = [(lambda: tbl.slice(0), None), (make_peer, None), (lambda: tbl.slice(0), _made_on_the_worker),
                  (make_peer, _peer_copied_on_the_worker)]
        if not gpu:  # distributed's own serializer of PyArrow tables (an IPC stream: one copy), for reference
            makers.append((lambda: tbl.to_pyarrow(), None))
        a, b = sorted(client.scheduler_info()["workers"])
        measured = _move_times(client, makers, a, b, 2 * repeats)
        # TCP cuts frames above distributed.comm.shard into shards; the receiver merges those of every frame
        # but the first by a copy (docs/distributed.md)
        comm = ("UCX: " + ", ".join(client.run(_ucx_transports)[b]) if protocol == "ucx"
                else f"TCP, distributed.comm.shard {dask.config.get('distributed.comm.shard')}")
    (t_table, best_table), (t_peer, best_peer), (t_made, best_made), (t_peer_made, _) = measured[:4]
    peer = "CuPy" if gpu else "NumPy"
    print(f"2. a partition moved between two workers ({'GPU' if gpu else 'CPU'}, {comm}), {nbytes / 1e6:.1f} MB: "
          f"arrowdev {t_table * 1e3:.1f} ms (fastest {best_table * 1e3:.1f}), {peer} {t_peer * 1e3:.1f} ms "
          f"(fastest {best_peer * 1e3:.1f}), ratio {t_peer / t_table:.2f} (fastest: {best_peer / best_table:.2f})")
    print(f"   an arrowdev table made on the sending worker (a frame per column): {t_made * 1e3:.1f} ms (fastest "
          f"{best_made * 1e3:.1f}), ratio {t_peer / t_made:.2f}; against a {peer} array copied on the sending "
          f"worker ({t_peer_made * 1e3:.1f} ms): {t_peer_made / t_made:.2f}")
    if not gpu:
        print(f"   a pyarrow.Table of the same data: {measured[4][0] * 1e3:.1f} ms")


def bench_pipeline(rows: int, repeats: int, gpu: bool) -> None:
    def make(seed: int) -> ad.ArrowTable:
        t = make_table(rows, seed).select(["a", "b"])
        return t.to_device() if gpu else t

    def sync(t: ad.ArrowTable) -> ad.ArrowTable:
        if gpu:
            t.column("y")._wait_for_producers()
        return t

    local = make(0)
    t_local = _median_time(lambda: sync(pipeline(local)), repeats)
    if gpu:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=1, threads_per_worker=1, dashboard_address=":0")
    else:
        cluster = LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        parts = add.from_map(make, [0]).persist()
        wait(parts)

        runs = iter(range(10**6))

        def on_cluster(work: Callable[[ad.ArrowTable], Any]) -> None:
            # a new key each run, or the scheduler would hand back the last result
            out = parts.map_partitions(lambda t, run: work(t), next(runs)).persist()
            wait(out)
            client.cancel(out)

        t_cluster = _median_time(lambda: on_cluster(lambda t: sync(pipeline(t))), repeats)
        t_task = _median_time(lambda: on_cluster(lambda t: t), repeats)
        [part] = futures_of(parts)
        t_submit = _median_time(lambda: _submitted(client, part, next(runs)), repeats)
        # distributed's client batches its messages to the scheduler, sending at most one batch per 10 ms
        # (Client: BatchedSend(interval="10ms")): a round started right after the last one waits for that
        # window; a pipeline started on an idle cluster does not
        t_idle = _median_time(lambda: on_cluster(lambda t: sync(pipeline(t))), repeats, idle=_CLIENT_BATCH_S)
        t_submit_idle = _median_time(lambda: _submitted(client, part, next(runs)), repeats, idle=_CLIENT_BATCH_S)
        t_cudf = _dask_cudf_time(client, make, repeats) if gpu else None
    print(f"3. UDF pipeline, {rows:,} rows in one partition ({'GPU' if gpu else 'CPU'}): in process "
          f"{t_local * 1e3:.1f} ms, 1-worker cluster {t_cluster * 1e3:.1f} ms, ratio {t_local / t_cluster:.2f} "
          f"(a task returning its partition: {t_task * 1e3:.1f} ms; the same as a bare client.submit, no "
          f"collection: {t_submit * 1e3:.1f} ms)")
    print(f"   started on an idle cluster ({_CLIENT_BATCH_S * 1e3:.0f} ms of rest before each round, untimed): "
          f"1-worker cluster {t_idle * 1e3:.1f} ms, ratio {t_local / t_idle:.2f}; a bare client.submit "
          f"{t_submit_idle * 1e3:.1f} ms")
    if t_cudf is not None:
        print(f"   dask-cudf, DataFrame.apply(row UDF, axis=1) on the same partition: {t_cudf * 1e3:.1f} ms, "
              f"ratio {t_cudf / t_cluster:.2f} (above 1: arrowdev faster)")


_CLIENT_BATCH_S = 0.03  # three times the client's batching interval


def _submitted(client: Client, part: Any, run: int) -> None:
    """distributed's own round trip of a task on a partition: submitted, run, known to be done."""
    out = client.submit(lambda t, run: t, part, run, pure=False)
    wait(out)
    client.cancel(out)


def _row_udf(row):  # cuDF's row UDF form of `udf` (a row UDF cannot call a plain Python function)
    a, b = row["a"], row["b"]
    return a * 2.0 + b if a > b else b - a


def _dask_cudf_time(client: Client, make: Callable[[int], ad.ArrowTable], repeats: int) -> float | None:
    """The pipeline in dask-cudf (``DataFrame.apply`` with a row UDF) on a 1-partition frame made and
    persisted on the worker, where cuDF is installed (``../shared/gpu/fetch-cudf``); None, saying why,
    where it is not or the UDF does not run there."""
    try:
        import cudf
        import dask.dataframe as dd
    except ImportError:
        print("   dask-cudf: not installed, not compared")
        return None
    frame = dd.from_map(lambda seed: cudf.DataFrame.from_arrow(make(seed).to_pyarrow()), [0]).persist()
    wait(frame)
    runs = iter(range(10**6))

    def once() -> None:
        out = frame.map_partitions(lambda df, run: df.assign(y=df.apply(_row_udf, axis=1)), next(runs)).persist()
        wait(out)
        client.cancel(out)
    try:
        return _median_time(once, repeats)
    except Exception as e:  # the peer's failure is reported, not the benchmark's
        print(f"   dask-cudf: DataFrame.apply failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="partitions on GPU 0, dask-cuda workers")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the moved / UDF partition")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", type=int, nargs="+", default=[1, 2, 3], help="which of parts 1-3 to run")
    parser.add_argument("--protocol", choices=["tcp", "ucx"], default="tcp",
                        help="the comm between the two workers of part 2 (ucx: needs distributed-ucxx)")
    args = parser.parse_args()
    if args.protocol == "ucx":
        try:
            import distributed_ucxx  # noqa: F401  (distributed finds its ucx:// comm by an entry point)
        except ImportError as e:
            parser.error(f"--protocol ucx needs distributed-ucxx, which is not importable ({e}): "
                         "pip install distributed-ucxx-cu13 (or arrowdev[dask-ucx13])")
    print(f"arrowdev {ad.__version__}, Python {platform.python_version()}, {platform.machine()}")
    if 1 in args.parts:
        bench_serialize([1_000, 100_000, args.rows], args.repeats)
    if 2 in args.parts:
        bench_move(args.rows, args.repeats, args.gpu, args.protocol)
    if 3 in args.parts:
        bench_pipeline(args.rows, args.repeats, args.gpu)


if __name__ == "__main__":
    main()
