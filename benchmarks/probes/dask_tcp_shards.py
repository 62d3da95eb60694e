"""Probe (CPU, TCP): why a table moved between two Dask workers is slower than a NumPy array of the same bytes.
For bench_dask's table (as scattered, and made on the sending worker) and a NumPy array: the move's median time
and, on each worker, the bytes that distributed's ``merge_and_deserialize`` copied to put a frame's shards back
together (frames above ``distributed.comm.shard`` are cut into shards; TCP receives each shard after the first
frame into a buffer of its own). Run it with and without ``DASK_DISTRIBUTED__COMM__SHARD=1GiB``. (Since
the ``dask`` family sends CPU buffers above the shard size in row pieces under it, it counts nothing for
arrowdev's tables either way.)

    python3 benchmarks/probes/dask_tcp_shards.py [--rows N] [--repeats R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path[:0] = [os.path.join(os.path.dirname(__file__), ".."), os.path.join(os.path.dirname(__file__), "..", "..", "tests")]

import dask  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

from bench_dask import _made_on_the_worker, make_table  # noqa: E402
from support.dask_merges import count_merge_copies, merge_copied  # noqa: E402

import arrowdev.dask as add  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeats", type=int, default=4)
    args = p.parse_args()
    tbl = make_table(args.rows)
    nbytes = add.nbytes(tbl)
    payloads = {"arrowdev table as scattered": (lambda: tbl.slice(0), None),
                "arrowdev table made on the worker": (lambda: tbl.slice(0), _made_on_the_worker),
                "NumPy array": (lambda: np.zeros(nbytes, np.uint8), None)}
    print(f"{nbytes / 1e6:.1f} MB, distributed.comm.shard {dask.config.get('distributed.comm.shard')}")
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.run(count_merge_copies)
        a, b = sorted(client.scheduler_info()["workers"])
        for name, (make, on_a) in payloads.items():
            times, copied = [], 0
            for i in range(args.repeats + 1):
                [future] = client.scatter([make()], workers=[a], hash=False)
                if on_a is not None:
                    future = client.submit(on_a, future, workers=[a], pure=False)
                wait(future)
                before = client.run(merge_copied)[b]
                t0 = time.perf_counter()
                client.submit(len, future, workers=[b], pure=False).result()
                if i:  # the first move opens the connection
                    times.append(time.perf_counter() - t0)
                    copied += client.run(merge_copied)[b] - before
                del future
            print(f"{name}: median {statistics.median(times) * 1e3:.1f} ms, shards merged by a copy on the "
                  f"receiver {copied / args.repeats / 1e6:.1f} MB per move", flush=True)


if __name__ == "__main__":
    main()
