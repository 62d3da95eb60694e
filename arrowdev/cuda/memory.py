"""One device memory resource for everything arrowdev allocates, with accounting.

The resource is a dedicated ``cupy.cuda.MemoryPool``: a caching, stream-aware pool (a block freed
while stream S was current is reused only by work ordered after it on S), so a free never races
with a copy or kernel still reading the block. docs/device.md says why CuPy's pool rather than
cuda.core's. Host staging memory comes from CuPy's pinned pool and is held until the event of
the copy that reads it has fired (:func:`keep_until`).

>>> import arrowdev as ad
>>> sorted(ad.cuda.memory_stats())
['allocations', 'bytes_in_use', 'frees', 'peak_bytes', 'pinned_bytes_in_use', 'pool_bytes']
"""

from __future__ import annotations

import threading
from typing import Any

from . import runtime

_lock = threading.Lock()
_pool: Any = None
_stats = {"bytes_in_use": 0, "peak_bytes": 0, "allocations": 0, "frees": 0, "pinned_bytes_in_use": 0}
_watch: list[tuple[Any, tuple]] = []  # (event, objects kept alive until it fires)


def pool() -> Any:
    """arrowdev's device memory pool (a ``cupy.cuda.MemoryPool``), made on first use."""
    global _pool
    cp = runtime.cupy()
    with _lock:
        if _pool is None:
            _pool = cp.cuda.MemoryPool()
        return _pool


def _account(nbytes: int, key: str = "bytes_in_use") -> None:
    with _lock:
        _stats[key] += nbytes
        if key == "bytes_in_use":
            _stats["allocations" if nbytes > 0 else "frees"] += 1
            _stats["peak_bytes"] = max(_stats["peak_bytes"], _stats["bytes_in_use"])


class DeviceBuffer:
    """``nbytes`` of device memory from arrowdev's pool on ``device_id``, allocated while
    ``stream`` is current (so the pool orders its reuse after that stream's work). The memory
    goes back to the pool when the last reference to this object goes."""

    __slots__ = ("ptr", "size", "device_id", "_mem", "__weakref__")

    def __init__(self, nbytes: int, device_id: int, stream: Any) -> None:
        cp = runtime.cupy()
        self.size = 0  # nothing to give back if the allocation fails
        with cp.cuda.Device(device_id), stream:
            self._mem = pool().malloc(max(nbytes, 1))  # cupy's OutOfMemoryError is a MemoryError
        self.ptr, self.size, self.device_id = self._mem.ptr, nbytes, device_id
        _account(nbytes)

    def __del__(self) -> None:
        if self.size:
            _account(-self.size)


class PinnedBuffer:
    """``nbytes`` of page-locked host memory from CuPy's pinned pool."""

    __slots__ = ("ptr", "size", "_mem", "__weakref__")

    def __init__(self, nbytes: int) -> None:
        self.size = 0
        self._mem = runtime.cupy().cuda.alloc_pinned_memory(max(nbytes, 1))
        self.ptr, self.size = self._mem.ptr, nbytes
        _account(nbytes, "pinned_bytes_in_use")

    def __del__(self) -> None:
        if self.size:
            _account(-self.size, "pinned_bytes_in_use")


def keep_until(event: Any, *objects: Any) -> None:
    """Keeps ``objects`` (staging buffers, sources) alive until ``event`` (a CuPy event) fires."""
    with _lock:
        _watch.append((event, objects))
    release_finished()


def release_finished() -> None:
    """Drops what :func:`keep_until` held for events that have fired."""
    with _lock:
        finished = [objs for e, objs in _watch if e.done]
        _watch[:] = [(e, objs) for e, objs in _watch if not e.done]
    del finished  # dropped outside the lock: buffers' __del__ takes it


def memory_stats() -> dict[str, int]:
    """arrowdev's device memory accounting.

    - ``bytes_in_use``: bytes of arrowdev device buffers alive now; ``peak_bytes``: the most at once.
    - ``allocations`` / ``frees``: device buffers made / returned since the process started.
    - ``pinned_bytes_in_use``: page-locked host memory held (host copies of device data, staging).
    - ``pool_bytes``: device bytes the pool holds from the driver (in use or cached); 0 before
      the first GPU allocation.
    """
    if _pool is not None:
        release_finished()
    with _lock:
        out = dict(_stats)
    out["pool_bytes"] = _pool.total_bytes() if _pool is not None else 0
    return out
