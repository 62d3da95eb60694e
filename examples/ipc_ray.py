"""Ray: a producer actor hands GPU tables to tasks on its node, zero-copy, by name.

    python examples/ipc_ray.py            # needs Ray, CuPy and a CUDA GPU

Ray's object store holds host memory: ``ray.put`` of a GPU table copies it to the host and back. Here the
table stays where it was made, in the producer actor's process, and what travels through Ray is its name. The
actor publishes each table (``ad.cuda.publish``); a task on the same node takes it (``ad.cuda.get(...,
take=True)``): zero-copy, holding a lease while it computes. The actor's pool gets the memory back when the
task is done with it, with no further word between them. Names are scoped by the job (``namespace=`` the Ray
job id) and by the user (the operating system's permissions). Tasks are pinned to the actor's node: CUDA IPC
works within one node. The producer's accounting is checked at the end.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import arrowdev as ad

TABLES, ROWS = 8, 1_000_000


@ray.remote
class Producer:
    def __init__(self, namespace: str) -> None:
        self.namespace, self.made = namespace, 0

    def make(self, rows: int) -> str:
        name = f"batch-{self.made}"
        self.made += 1
        table = ad.table({"x": pa.array(np.arange(rows, dtype=np.float64))}).to_device()
        ad.cuda.publish(name, table, namespace=self.namespace)  # kept here until a task takes it
        return name

    def accounting(self) -> dict:
        return {**ad.cuda.lease_stats(), "bytes_in_use": ad.cuda.memory_stats()["bytes_in_use"],
                "names": ad.cuda.names(self.namespace)}


@ray.remote
def consume(name: str, namespace: str) -> tuple[float, int]:
    import cupy

    table = ad.cuda.get(name, namespace=namespace, take=True)  # the producer's memory, leased
    return float(cupy.asarray(table.column("x")).sum()), os.getpid()  # the lease ends with `table`


def main() -> None:
    ray.init(num_gpus=1, include_dashboard=False)
    try:
        namespace = ray.get_runtime_context().get_job_id()
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        producer = Producer.options(num_gpus=0.5, scheduling_strategy=here).remote(namespace)
        names = [producer.make.remote(ROWS) for _ in range(TABLES)]
        results = ray.get([consume.options(num_gpus=0.1, scheduling_strategy=here).remote(n, namespace)
                           for n in names])
        assert all(total == ROWS * (ROWS - 1) / 2 for total, _ in results), results
        deadline = time.monotonic() + 10
        while True:
            state = ray.get(producer.accounting.remote())
            if state["leases_granted"] == 0 and state["exports_lent"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        print(f"{TABLES} tables read in task processes {sorted({pid for _, pid in results})}; the producer now: "
              f"{state['leases_granted']} leases held by others, {state['exports_lent']} exports lent, names "
              f"{state['names']}, {state['bytes_in_use']} device bytes in use")
        assert state["leases_granted"] == 0 and state["names"] == [] and state["bytes_in_use"] == 0, state
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
