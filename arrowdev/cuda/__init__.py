"""arrowdev's device runtime: copies between host and GPUs, the accounted memory pool, streams
and sync events. Everything here needs CuPy and a CUDA GPU (``pip install arrowdev[cuda13]``);
without them these functions raise :class:`arrowdev.DeviceUnavailableError`, and the rest of
arrowdev keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import Device
from .memory import memory_stats
from .runtime import device_count, is_available

if TYPE_CHECKING:
    from ..column import ArrowColumn

__all__ = ["copy_columns", "device_count", "is_available", "memory_stats"]


def copy_columns(columns: list[ArrowColumn], target: Device, stream: Any = None) -> list[ArrowColumn]:
    """Copies of ``columns`` (all on one device) on ``target``, in one batch of stream-ordered
    copies whose results share one sync event. Columns already on ``target`` are returned as is."""
    from . import runtime, transfer

    if target.type == "cuda":
        runtime.check_device(target.id)
    todo = [c for c in columns if c.device != target]
    if not todo:
        return list(columns)
    if len({c.device for c in todo}) > 1:
        raise ValueError(f"expected columns on one device, got {sorted({c.device for c in todo})}")
    items = [(c.type, chunk, c._chunk_null_count(i), c._read) for c in todo for i, chunk in enumerate(c._chunks)]
    copied = iter(transfer.copy_chunks(items, todo[0].device, target, stream))
    results = {}
    for c in todo:
        chunks = [next(copied) for _ in c._chunks]
        results[id(c)] = c._derive(chunks, [c._chunk_null_count(i) for i in range(c.num_chunks)])
    return [results.get(id(c), c) for c in columns]
