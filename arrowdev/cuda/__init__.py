"""arrowdev's device runtime: copies between host and GPUs, the accounted memory pool, streams
and sync events, and tables shared with other processes of the node (CUDA IPC with leases; by name:
:func:`publish` / :func:`get`). Everything here needs CuPy and a CUDA GPU (``pip install arrowdev[cuda13]``);
without them these functions raise :class:`arrowdev.DeviceUnavailableError`, and the rest of
arrowdev keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import chunks as _chunked
from ..core.types import Device
from .capture import Graph, capture
from ..gpu.memory import memory_stats, reset_peak, set_limit, use_rmm
from ..gpu import memory, runtime  # noqa: F401  (ad.cuda.runtime, ad.cuda.memory: their names before gpu/)
from ..gpu.runtime import device_count, is_available
from .lease_server import BrokenLeaseWarning, set_exit_wait
from .publish import get, names, publish, unpublish

if TYPE_CHECKING:
    from ..core.chunks import ColumnCore as ArrowColumn  # any column: a copy is of the column's own class

__all__ = ["BrokenLeaseWarning", "Graph", "capture", "copy_columns", "device_count", "get", "is_available",
           "lease_stats", "memory_stats", "names", "publish", "reset_peak", "set_exit_wait", "set_limit",
           "unpublish", "use_for_cupy", "use_for_numba", "use_rmm"]


def lease_stats() -> dict[str, int]:
    """Leases across processes (CUDA IPC, docs/memory.md), as this process sees them.

    - As an exporter: ``exports`` open, ``exports_lent`` (their exporting object gone, kept for importers),
      ``leases_granted`` held now by other processes, ``importers`` holding them, ``bytes_lent`` (as in
      :func:`memory_stats`).
    - As an importer: ``leases_held`` on other processes' memory, ``exporters`` they come from, and
      ``leases_broken``: of those, how many are on exporters that have exited or died; ``mappings_open``:
      allocations of other processes mapped here, of which ``mappings_idle`` are kept for the next import
      without a user (closed after ``ipc_mappings.IDLE_SECONDS``).
    """
    from . import ipc_mappings, lease_client, lease_server

    out = lease_server.registry().stats()
    out.update(lease_client.stats())
    out.update(ipc_mappings.stats())
    return out


def use_for_numba() -> None:
    """Makes numba-cuda allocate device arrays from arrowdev's pool (its EMM plugin,
    :mod:`arrowdev.cuda.numba_emm`). Call it before numba makes a CUDA context (before the first numba
    device array or kernel); afterwards it raises, because numba cannot change managers then. The
    same is done by setting ``NUMBA_CUDA_MEMORY_MANAGER=arrowdev.cuda.numba_emm`` before numba starts."""
    from numba import cuda
    from numba.cuda.cudadrv import driver

    from .numba_emm import ArrowdevNumbaMemoryManager

    live = [d for d in driver.driver.devices.values() if d.primary_context is not None]
    if live and driver._memory_manager is not ArrowdevNumbaMemoryManager:
        raise RuntimeError("numba has already made a CUDA context (device "
                           f"{live[0].id}) with its own memory manager: call ad.cuda.use_for_numba() "
                           "before numba's first device array or kernel")
    cuda.set_memory_manager(ArrowdevNumbaMemoryManager)


def use_for_cupy() -> None:
    """Makes CuPy allocate from arrowdev's pool too (``cupy.cuda.set_allocator``). Those blocks count in
    ``memory_stats()["pool_bytes"]``, not in ``bytes_in_use``, which counts arrowdev's own buffers."""
    from ..gpu import memory, runtime

    runtime.cupy().cuda.set_allocator(memory.pool().malloc)


def merges_on_copy(column: ArrowColumn, target: Device, rechunk: bool | None) -> bool:
    """Whether a copy of ``column`` to ``target`` makes it one chunk: host to GPU copies only, where
    ``rechunk`` is True, or None and the column has many small chunks (``transfer.MERGE_MORE_CHUNKS_THAN``),
    and its chunks can be merged by byte copies (``transfer.mergeable``)."""
    from ..core import layout
    from . import transfer

    held = _chunked.chunks(column)
    if rechunk is False or target.type != "cuda" or not column.device.is_cpu_readable or len(held) < 2:
        return False
    if rechunk is None and (len(held) <= transfer.MERGE_MORE_CHUNKS_THAN
                            or len(column) >= transfer.MERGE_MEAN_ROWS_BELOW * len(held)):
        return False
    return transfer.mergeable(_chunked.dtype(column), [layout.Node.of(h) for h in held])


def copy_columns(columns: list[ArrowColumn], target: Device, stream: Any = None,
                 rechunk: bool | None = False) -> list[ArrowColumn]:
    """Copies of ``columns`` (all on one device) on ``target``, in one batch of stream-ordered
    copies whose results share one sync event. Columns already on ``target`` are returned as is;
    those :func:`merges_on_copy` picks for ``rechunk`` arrive as one chunk."""
    from ..gpu import runtime
    from . import transfer

    if target.type == "cuda":
        runtime.check_device(target.id)
    todo = [c for c in columns if c.device != target]
    if not todo:
        return list(columns)
    if len({c.device for c in todo}) > 1:
        raise ValueError(f"expected columns on one device, got {sorted({c.device for c in todo})}")
    read = _chunked.planning_reader(todo)  # one reader: device offsets are read in one batch
    merge = [merges_on_copy(c, target, rechunk) for c in todo]
    nulls = [[_chunked.chunk_null_count(c, i) for i in range(len(_chunked.chunks(c)))] for c in todo]
    items = [(_chunked.dtype(c), chunk, nulls[column][i], read, column)
             for column, c in enumerate(todo) if not merge[column] for i, chunk in enumerate(_chunked.chunks(c))]
    merges = [(_chunked.dtype(c), list(_chunked.chunks(c)), nulls[column], read, column)
              for column, c in enumerate(todo) if merge[column]]
    copied = transfer.copy_chunks(items, todo[0].device, target, stream, merges)
    singles, grouped = iter(copied[:len(items)]), iter(copied[len(items):])
    results = {}
    for column, c in enumerate(todo):
        chunks = next(grouped) if merge[column] else [next(singles) for _ in nulls[column]]
        counts = [sum(nulls[column])] if len(chunks) == 1 and merge[column] else nulls[column]
        results[id(c)] = _chunked.derive(c, chunks, counts)
    return [results.get(id(c), c) for c in columns]
