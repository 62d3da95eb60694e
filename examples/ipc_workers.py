"""GPU tables handed between the worker processes of one node, zero-copy, by name.

    python examples/ipc_workers.py            # needs CuPy and a CUDA GPU

The pattern of Spark's and Ray's Python workers (docs/memory.md has their recipes: examples/ipc_spark.py,
examples/ipc_ray.py), with plain processes:

- a lookup table that every worker reads: one copy on the GPU, shared (each worker's ``get`` takes a lease);
- batches handed over one at a time with ``get(take=True)``: the producer forgets a batch once a worker has
  taken it, and its memory goes back to the producer's pool when that worker is done with it;
- one worker killed with SIGKILL while it holds a batch: its leases come back at once.

It checks every result and the producer's accounting at the end, and prints them.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import time

import numpy as np
import pyarrow as pa

import arrowdev as ad

BATCHES, ROWS, KEYS, WORKERS = 12, 100_000, 1000, 3


def worker(namespace: str, todo, done) -> None:  # noqa: ANN001 - multiprocessing queues
    import cupy

    lookup = ad.cuda.get("lookup", namespace=namespace, wait=30)
    weights = cupy.asarray(lookup.column("w"))  # the producer's memory, read in place
    while True:
        try:
            name = todo.get(timeout=120)
        except queue.Empty:
            break  # the producer is gone
        if name is None:
            break
        batch = ad.cuda.get(name, namespace=namespace, take=True)
        keys = cupy.asarray(batch.column("k"))
        if name.endswith("-die"):
            # A Queue's feeder thread writes what put() was given: what this worker put is written before it
            # dies (killed first, a result would be lost; killed mid-write, the queue's lock with it)
            done.close()
            done.join_thread()
            os.kill(os.getpid(), signal.SIGKILL)  # dies holding the batch and the lookup table
        total = float(weights[keys].sum())
        del batch, keys  # the lease ends here: the batch's memory is the producer's pool's again
        done.put((name, os.getpid(), total))


def hand_out(namespace: str, todo, done) -> tuple[dict, list]:  # noqa: ANN001 - multiprocessing queues
    """Publishes the batches one by one for the workers to take; returns (the sum each should give, what the
    workers sent back: every batch but the one whose worker dies)."""
    rng = np.random.default_rng(0)
    expected = {}
    for i in range(BATCHES):
        keys = rng.integers(0, KEYS, ROWS)
        name = f"batch-{i}" + ("-die" if i == BATCHES // 2 else "")
        ad.cuda.publish(name, ad.table({"k": pa.array(keys)}).to_device(), namespace=namespace)
        expected[name] = float(keys.sum())  # the lookup's weights are 0, 1, 2, ...: the sum of the keys
        todo.put(name)
    results = []
    for _ in range(BATCHES - 1):
        try:
            results.append(done.get(timeout=120))
        except queue.Empty:
            raise TimeoutError(f"no worker sent a result for 120 s; received {sorted(r[0] for r in results)} of "
                               f"{sorted(expected)}") from None
    return expected, results


def main() -> None:
    namespace = f"example-{os.getpid()}"  # one job's names, apart from any other job's
    lookup = ad.table({"w": pa.array(np.arange(KEYS, dtype=np.float64))}).to_device()
    ad.cuda.publish("lookup", lookup, namespace=namespace)
    ctx = multiprocessing.get_context("spawn")
    todo, done = ctx.Queue(), ctx.Queue()
    workers = [ctx.Process(target=worker, args=(namespace, todo, done), daemon=True) for _ in range(WORKERS)]
    for w in workers:
        w.start()
    try:
        expected, results = hand_out(namespace, todo, done)
    finally:  # an error here stops the workers rather than leaving them waiting for batches
        for _ in workers:
            todo.put(None)
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.terminate()
    assert all(expected[name] == total for name, _, total in results), results
    killed = [w for w in workers if w.exitcode == -signal.SIGKILL]
    print(f"{len(results)} batches read by workers {sorted({pid for _, pid, _ in results})}; "
          f"worker {killed[0].pid} was killed holding {sorted(set(expected) - {n for n, _, _ in results})}")
    deadline = time.monotonic() + 5
    while ad.cuda.lease_stats()["leases_granted"] and time.monotonic() < deadline:
        time.sleep(0.01)
    stats = ad.cuda.lease_stats()
    print(f"leases held by others now: {stats['leases_granted']}; exports lent: {stats['exports_lent']}; "
          f"bytes lent: {ad.cuda.memory_stats()['bytes_lent']}; names left: {ad.cuda.names(namespace)}")
    assert stats["leases_granted"] == 0 and stats["exports_lent"] == 0
    assert ad.cuda.names(namespace) == ["lookup"]  # every batch was taken, the killed worker's too
    ad.cuda.unpublish("lookup", namespace=namespace)
    del lookup
    print(f"device bytes in use at the end: {ad.cuda.memory_stats()['bytes_in_use']}")
    assert ad.cuda.memory_stats()["bytes_in_use"] == 0


if __name__ == "__main__":
    main()
