"""Counting what distributed copies to put a frame's shards back together on a receiving worker
(``merge_and_deserialize`` falls back to ``host_array_from_buffers`` when the shards do not share a buffer).
Run ``count_merge_copies`` on the workers (``client.run``), then read ``merge_copied`` there before and after."""

from __future__ import annotations

import sys


def count_merge_copies() -> None:
    """On a worker: from now on, counts the bytes distributed copies when it cannot merge shards in place."""
    import distributed.protocol  # noqa: F401

    module = sys.modules["distributed.protocol.serialize"]  # the package's `serialize` is the function
    copy = module.host_array_from_buffers

    def counted(buffers):
        module.merge_copied = getattr(module, "merge_copied", 0) + sum(memoryview(b).nbytes for b in buffers)
        return copy(buffers)
    module.host_array_from_buffers = counted


def merge_copied() -> int:
    """On a worker: the bytes counted so far."""
    return getattr(sys.modules["distributed.protocol.serialize"], "merge_copied", 0)
