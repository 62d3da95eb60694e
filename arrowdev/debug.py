"""Counters for checking that imports and releases, allocations and frees balance, and a leak check
built on them.

>>> import pyarrow as pa, arrowdev as ad
>>> before = ad.debug.ownership_stats()
>>> col = ad.column(pa.array([1, 2, 3]))
>>> ad.debug.ownership_stats()["live_containers"] - before["live_containers"]
1
>>> del col
>>> ad.debug.ownership_stats()["live_containers"] - before["live_containers"]
0
>>> with ad.debug.leak_check():
...     pa.array(ad.column(pa.array([1, 2])).apply(lambda x: x + 1)).to_pylist()
[2, 3]
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

from . import _capsules
from .errors import ArrowDevError

__all__ = ["LeakError", "leak_check", "ownership_stats"]

_LIVE = ("live_containers", "live_exported_nodes", "live_exported_streams", "live_built_nodes", "live_node_blocks")


class LeakError(ArrowDevError, AssertionError):
    """Raised by :func:`leak_check` when a block ends with more live objects than it started with."""


def ownership_stats() -> dict[str, int]:
    """The native core's counters.

    - ``live_containers``: arrays held now (imports minus producer releases).
    - ``imports`` / ``producer_releases``: arrays moved in / producer release callbacks called,
      since the process started.
    - ``live_exported_nodes``: nodes handed to consumers and not yet released by them.
    - ``live_exported_streams``: exported streams not yet released.
    - ``live_built_nodes``: arrays arrowdev assembled itself (record batches of a table, copies,
      UDF outputs, zero-copy views of GPU arrays) that are not yet released.
    - ``live_node_blocks``: allocations holding exported and built nodes (one per export, freed
      with its last node) not yet freed.
    - ``live_schema_copies``: schema copies arrowdev made (exported ones, and those its parsed
      types keep) not yet released.
    """
    return _capsules.ownership_stats()


def _settle() -> None:
    """Lets work in flight finish: copies release their sources and staging memory when their event has
    fired (only once the CUDA layer has been used: no GPU probing). Then collects garbage."""
    from .gpu import memory

    if memory.in_use():
        from .gpu import runtime

        runtime.cupy().cuda.runtime.deviceSynchronize()
        memory.release_finished()
    gc.collect()


def _device_counts() -> dict[str, int]:
    """arrowdev's device buffers in use (only once the CUDA layer has been used)."""
    from .gpu import memory

    if not memory.in_use():
        return {}
    stats = memory.memory_stats()
    return {"device bytes in use": stats["bytes_in_use"], "device buffers": stats["allocations"] - stats["frees"],
            "pinned bytes in use": stats["pinned_bytes_in_use"]}


def _nrt_counts() -> dict[str, int]:
    """numba-cuda NRT allocations and MemInfos alive, when NRT statistics are on
    (``NUMBA_CUDA_NRT_STATS=1``) and NRT has been used in this process."""
    try:
        from numba.cuda.memory_management import rtsys
    except ImportError:
        return {}
    if not getattr(rtsys, "_initialized", False):  # NRT never ran: nothing to count, and asking would
        return {}                                   # initialise it (a device allocation of its own)
    try:
        stats = rtsys.get_allocation_stats()
    except Exception:  # NRT off, stats off, or never initialised: nothing to compare
        return {}
    return {"NRT allocations": stats.alloc - stats.free, "NRT MemInfos": stats.mi_alloc - stats.mi_free}


def _snapshot() -> dict[str, int]:
    _settle()
    counts = {key: value for key, value in ownership_stats().items() if key in _LIVE}
    counts.update(_device_counts())
    counts.update(_nrt_counts())
    counts.update(_arena_counts())
    return counts


def _arena_counts() -> dict[str, int]:
    """Live string arenas and their bytes, and MemInfos made but not yet released (string UDFs)."""
    import sys

    results = sys.modules.get("arrowdev.udf.run.string_results")
    if results is None:  # no string UDF ran
        return {}
    stats = results.managed_string_stats()
    return {"string_arenas": stats["arenas_live"], "string_arena_bytes": stats["arena_bytes_live"],
            "managed_string_meminfos": stats["meminfos_made"] - stats["meminfos_released"]}


@contextlib.contextmanager
def leak_check() -> Iterator[None]:
    """Raises :class:`LeakError`, naming what leaked, if the block leaves more arrowdev objects alive than
    it found: held arrays, exported nodes and streams, arrays arrowdev built, device buffers and pinned
    memory from arrowdev's pool, string UDF arenas and their MemInfos, and (with NRT statistics on)
    numba-cuda NRT allocations and MemInfos.
    Objects the block returns and the caller keeps count as leaks: check blocks that drop what they make.
    """
    before = _snapshot()
    yield
    after = _snapshot()
    leaked = {key: after[key] - before.get(key, 0) for key in after if after[key] > before.get(key, 0)}
    if leaked:
        details = ", ".join(f"{key}: {before.get(key, 0)} -> {after[key]}" for key in leaked)
        raise LeakError(f"allocations and releases do not balance across the block: {details}")
