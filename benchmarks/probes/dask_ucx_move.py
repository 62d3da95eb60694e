"""Probe (GPU, distributed-ucxx): where the time of a GPU partition moved between two Dask workers over UCX
goes, for arrowdev and CuPy payloads of the same bytes. For each payload: the task's time on the client,
the receiving worker's transfer log (the comm's own time) and the change of both workers' ``digests_total``
(distributed's per-activity seconds), and where the sender's memory lives (the CUDA allocation each frame
sits in: a large RMM pool, or blocks of its own). Payloads: bench_dask's table as scattered, and copied on
the sender first (a frame per column); one CuPy array; an arrowdev
column of one uint8 buffer; as many CuPy arrays as the table has device frames, of the same sizes. Then again
with ``ad.cuda.use_rmm()`` on every worker, and (``--multi-buffer``) with distributed-ucxx's multi-buffer
sends. First, in this process, a cProfile of the table's ``cuda``-family serialize, deserialize and sizeof to
``$OUT/ucx_profile.txt``.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/dask_ucx_move.py [--rows N] [--repeats R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402
import dask  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

import arrowdev as ad  # noqa: E402
import arrowdev.dask as add  # noqa: E402
from bench_dask import _made_on_the_worker, _ucx_config, make_table  # noqa: E402


def _allocation(ptr: int) -> tuple[int, int]:
    """(start, size) of the CUDA allocation holding device address ``ptr``."""
    from cuda.bindings import driver

    err, start = driver.cuPointerGetAttribute(driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr)
    err2, size = driver.cuPointerGetAttribute(driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr)
    return int(start), int(size)


def _frame_pointers(obj) -> list[tuple[int, int]]:
    from distributed.protocol import serialize

    _, frames = serialize(obj, serializers=("cuda",))
    out = []
    for f in frames:
        cai = getattr(f, "__cuda_array_interface__", None)
        if cai is not None and cai["shape"][0]:
            out.append((cai["data"][0], cai["shape"][0]))
    return out


def _where(dask_worker, key) -> str:
    """Where a stored payload's device frames sit: how many distinct allocations, and their sizes."""
    obj = dask_worker.data[key]
    spans = _frame_pointers(obj)
    allocs = {_allocation(p) for p, _ in spans}
    sizes = sorted({s for _, s in allocs})
    return f"{len(spans)} frames in {len(allocs)} allocation(s) of {[round(s / 2**20) for s in sizes][:4]} MiB"


def _digests(dask_worker) -> dict:
    return {"|".join(map(str, k)): v for k, v in dask_worker.digests_total.items() if isinstance(v, (int, float))}


def _incoming(dask_worker) -> list:
    return [(e.get("duration"), e.get("total")) for e in list(dask_worker.transfer_incoming_log)[-1:]]


def move(client, make, a, b, repeats):
    times, comm, where = [], [], None
    make, on_sender = make if isinstance(make, tuple) else (make, None)
    before = {w: client.run(_digests, workers=[w])[w] for w in (a, b)}
    for i in range(repeats + 1):
        [future] = client.scatter([make()], workers=[a], hash=False)
        if on_sender is not None:
            future = client.submit(on_sender, future, workers=[a], pure=False)
        wait(future)
        if where is None:
            where = client.run(_where, key=future.key, workers=[a])[a]
        t0 = time.perf_counter()
        client.submit(len, future, workers=[b], pure=False).result()
        if i:
            times.append(time.perf_counter() - t0)
            comm.append(client.run(_incoming, workers=[b])[b])
        del future
    after = {w: client.run(_digests, workers=[w])[w] for w in (a, b)}
    deltas = {}
    for w, tag in ((a, "A"), (b, "B")):
        for k, v in after[w].items():
            d = v - before[w].get(k, 0)
            if "seconds" in k and d > 1e-4:
                deltas[f"{tag} {k}"] = d / (repeats + 1)
    return statistics.median(times), min(times), comm, where, deltas


def profile_in_process(gtbl) -> None:
    import cProfile
    import pstats

    from dask.sizeof import sizeof
    from distributed.protocol import deserialize, serialize

    def once():
        header, frames = serialize(gtbl, serializers=("cuda",))
        got = deserialize(header, frames, deserializers=("cuda",))
        sizeof(got)
        return got
    once()
    for name, fn in (("serialize", lambda: serialize(gtbl, serializers=("cuda",))), ("sizeof", lambda: sizeof(gtbl))):
        t0 = time.perf_counter()
        for _ in range(5):
            fn()
        print(f"in process: {name} {(time.perf_counter() - t0) / 5 * 1e3:.2f} ms", flush=True)
    from arrowdev.serialize import frames as _serialize

    runtime = ad.cuda.runtime
    read_many, reads = runtime.read_many, []

    def timed_read_many(requests, device_id):  # the planning's batch of offset reads, timed apart
        t = time.perf_counter()
        try:
            return read_many(requests, device_id)
        finally:
            reads.append((len(requests), time.perf_counter() - t))
    runtime.read_many = timed_read_many
    for _ in range(3):  # a table's first send: planning (a batch of offset reads) and packing its small buffers
        fresh = _made_on_the_worker(gtbl)
        runtime.cupy().cuda.runtime.deviceSynchronize()
        reads.clear()
        t0 = time.perf_counter()
        plan_header, spans = _serialize._plan(fresh, fresh.device, ready=True)
        t1 = time.perf_counter()
        fh, ff = serialize(fresh, serializers=("cuda",))
        t2 = time.perf_counter()
        print(f"in process, a fresh table: plan {(t1 - t0) * 1e3:.2f} ms (offset reads: "
              f"{', '.join(f'{n} in {s * 1e3:.2f} ms' for n, s in reads)}), then serialize (plan kept) "
              f"{(t2 - t1) * 1e3:.2f} ms, {len(spans)} spans -> {len(ff)} frames", flush=True)
        del fresh, ff
    runtime.read_many = read_many
    header, frames = serialize(gtbl, serializers=("cuda",))
    t0 = time.perf_counter()
    for _ in range(5):
        deserialize(header, frames, deserializers=("cuda",))
    print(f"in process: deserialize {(time.perf_counter() - t0) / 5 * 1e3:.2f} ms", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        once()
    profile.disable()
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "ucx_profile.txt"), "w") as fh:
        pstats.Stats(profile, stream=fh).sort_stats("tottime").print_stats(30)
        pstats.Stats(profile, stream=fh).sort_stats("cumtime").print_stats(40)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000_000)
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--multi-buffer", action="store_true")
    p.add_argument("--only", nargs="*", help="payload names to run (default: all)")
    args = p.parse_args()
    tbl = make_table(args.rows)
    nbytes = add.nbytes(tbl)
    pool_bytes = -(-3 * nbytes // 2**20) * 2**20
    profile_in_process(tbl.to_device())
    config = _ucx_config(True, pool_bytes)
    if args.multi_buffer:
        config["distributed-ucxx.multi-buffer"] = True
    with dask.config.set(config), LocalCluster(
            protocol="ucx", n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        gtbl = tbl.to_device()
        sizes = [n for _, n in _frame_pointers(gtbl)]
        print(f"table: {nbytes / 1e9:.2f} GB, {len(sizes)} device frames", flush=True)
        payloads = {
            "arrowdev table": lambda: gtbl.slice(0),
            "arrowdev table made on the sender": (lambda: gtbl.slice(0), _made_on_the_worker),
            "CuPy array": lambda: cp.random.randint(0, 255, nbytes, dtype=cp.uint8),
            "arrowdev 1-buffer column": lambda: ad.column(cp.random.randint(0, 255, nbytes, dtype=cp.uint8)),
            f"{len(sizes)} CuPy arrays": lambda: [cp.random.randint(0, 255, n, dtype=cp.uint8) for n in sizes],
        }
        if args.only:
            payloads = {k: v for k, v in payloads.items() if any(o in k for o in args.only)}
        a, b = sorted(client.scheduler_info()["workers"])
        for phase in ("default pools", "use_rmm on workers"):
            if phase == "use_rmm on workers":
                client.run(ad.cuda.use_rmm)
            for name, make in payloads.items():
                med, best, comm, where, deltas = move(client, make, a, b, args.repeats)
                print(f"[{phase}] {name}: median {med * 1e3:.1f} ms, fastest {best * 1e3:.1f} ms; sender: {where}",
                      flush=True)
                print(f"    B's transfer log (s, bytes): {comm}")
                for k, v in sorted(deltas.items(), key=lambda kv: -kv[1])[:12]:
                    print(f"    {k}: {v * 1e3:.2f} ms per move")


if __name__ == "__main__":
    main()
