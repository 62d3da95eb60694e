"""Closing a local Dask cluster's workers on a busy host."""

from __future__ import annotations

from typing import Any


def close_workers(cluster: Any, timeout: float = 60) -> None:
    """Closes ``cluster``'s nannies, each given ``timeout`` seconds: a GPU worker's CUDA context can take longer to
    go on a busy host (16 test processes on one GPU) than the 5 s the cluster's own close gives a nanny, which
    then fails the test at teardown. Call it before leaving the cluster's ``with`` block."""
    for nanny in list(cluster.workers.values()):
        cluster.sync(nanny.close, timeout=timeout)
