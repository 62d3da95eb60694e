"""One device memory resource for everything arrowdev allocates, with accounting.

The resource is a dedicated ``cupy.cuda.MemoryPool``: a caching, stream-aware pool (a block freed
while stream S was current is reused only by work ordered after it on S), so a free never races
with a copy or kernel still reading the block. docs/device.md says why CuPy's pool rather than
cuda.core's. Host staging memory comes from CuPy's pinned pool and is held until the event of
the copy that reads it has fired (:func:`keep_until`).

>>> import arrowdev as ad
>>> sorted(ad.cuda.memory_stats())
['allocations', 'bytes_in_use', 'bytes_lent', 'frees', 'peak_bytes', 'pinned_bytes_in_use', 'pool_bytes']
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from typing import Any

from ..errors import DeviceUnavailableError, install_hint
from . import runtime

# Re-entrant: a buffer's __del__ takes it, and the garbage collector may run that __del__ in a thread
# that already holds it (any allocation inside a locked block can start a collection).
_lock = threading.RLock()
_pool: Any = None  # a cupy.cuda.MemoryPool, or an RmmPool after use_rmm()
_limit: int | None = None  # bytes of arrowdev buffers allowed alive at once (set_limit)
_stats = {"bytes_in_use": 0, "peak_bytes": 0, "allocations": 0, "frees": 0, "pinned_bytes_in_use": 0, "bytes_lent": 0}
_live: dict[int, int] = {}  # address -> size of each live DeviceBuffer (what an IPC export pins: buffers_holding)
_watch: list[tuple[Any, tuple]] = []  # (SyncEvent, objects kept alive until it fires), oldest first
_SWEEP_EVERY = 64  # keep_until asks every watched event only this often (see keep_until)
_calls_since_sweep = 0


def in_use() -> bool:
    """True once arrowdev's device memory has been used in this process (its pool exists, or objects wait
    on GPU events: a test may have reset the pool): callers that only count must not start CUDA."""
    return _pool is not None or bool(_watch)


def pool() -> Any:
    """arrowdev's device memory pool (a ``cupy.cuda.MemoryPool``, made on first use, or the
    :class:`RmmPool` after :func:`use_rmm`)."""
    global _pool
    made = _pool  # the common case, without the lock (a UDF call allocates once)
    if made is not None:
        return made
    cp = runtime.cupy()
    with _lock:
        if _pool is None:
            _pool = cp.cuda.MemoryPool()
        return _pool


class RmmPool:
    """Device memory from RMM's current resource of each device (what dask-cuda's ``rmm_pool_size`` sets
    up, shared with cuDF and UCX), handed out as CuPy memory pointers like ``cupy.cuda.MemoryPool``'s.
    Each block is RMM's ``DeviceBuffer``, allocated and freed in stream order on the stream current when
    it was made."""

    def malloc(self, nbytes: int) -> Any:
        cp = runtime.cupy()
        buffer = _rmm().DeviceBuffer(size=nbytes, stream=_rmm_stream(cp.cuda.get_current_stream()))
        return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(buffer.ptr, nbytes, buffer), 0)

    def total_bytes(self) -> int:
        return _stats["bytes_in_use"]  # RMM's resource is shared: only arrowdev's own part is known here

    def free_all_blocks(self) -> None:
        """Nothing is cached here (RMM's pool caches, for everyone)."""


def transport_buffer(nbytes: int, device_id: int, stream: Any) -> tuple[int, Any]:
    """(address, owner) of device memory for a frame handed to a transport: from RMM's resource for the
    device where one was set up (a pool: what distributed-ucxx receives into; UCX maps an allocation once,
    and a pool is one allocation), else from arrowdev's pool (RMM's default resource would cudaMalloc and
    cudaFree, which waits for the whole device, at every send). Allocated in ``stream``'s order."""
    rmm = _configured_rmm(device_id)
    if rmm is None:
        buffer = DeviceBuffer(nbytes, device_id, stream)
        return buffer.ptr, buffer
    with runtime.on_device(device_id):
        made = rmm.DeviceBuffer(size=nbytes, stream=_rmm_stream(stream))
    return made.ptr, made


def _configured_rmm(device_id: int) -> Any:
    """The rmm module where it is installed and its resource for ``device_id`` is not its default
    (a ``CudaMemoryResource``: a cudaMalloc per buffer); else None."""
    try:
        import rmm
        import rmm.mr

        return None if isinstance(rmm.mr.get_per_device_resource(device_id), rmm.mr.CudaMemoryResource) else rmm
    except (ImportError, AttributeError):
        return None


def _rmm() -> Any:
    try:
        import rmm
    except ImportError as e:
        raise DeviceUnavailableError(f"this needs RMM: pip install rmm-cu13, or {install_hint('dask-cuda13')} "
                                     f"({e})") from None
    return rmm


def _rmm_stream(stream: Any) -> Any:
    try:
        from rmm.pylibrmm.stream import Stream
    except ImportError:  # RMM before 24.12
        from rmm._cuda.stream import Stream
    return Stream(stream)


def use_rmm(limit_bytes: int | None = None) -> None:
    """Makes arrowdev draw its device memory from RMM (one resource per GPU, shared with cuDF, UCX and
    dask-cuda) instead of its own CuPy pool, with at most ``limit_bytes`` of arrowdev buffers alive at
    once (None: no limit). Buffers made before keep their memory. In a Dask cluster run it on every
    worker: ``client.run(ad.cuda.use_rmm, limit_bytes)``."""
    global _pool
    _rmm()
    with _lock:
        _pool = RmmPool()
    set_limit(limit_bytes)


def set_limit(limit_bytes: int | None) -> None:
    """At most ``limit_bytes`` of arrowdev device buffers alive at once (None: no limit); past it an
    allocation raises ``MemoryError`` naming the limit."""
    global _limit
    if limit_bytes is not None and (not isinstance(limit_bytes, int) or limit_bytes < 0):
        raise ValueError(f"expected a byte count >= 0 or None, got {limit_bytes!r}")
    _limit = limit_bytes


def limit_left() -> int | None:
    """Bytes arrowdev may still allocate under :func:`set_limit` (None: no limit)."""
    return None if _limit is None else max(_limit - _stats["bytes_in_use"], 0)


def _check_limit(nbytes: int) -> None:
    if _limit is not None and _stats["bytes_in_use"] + nbytes > _limit:
        raise MemoryError(f"arrowdev's device memory limit of {_limit} bytes would be exceeded: "
                          f"{_stats['bytes_in_use']} in use, {nbytes} asked for (ad.cuda.set_limit)")


def _account(nbytes: int, key: str = "bytes_in_use", address: int = 0) -> None:
    with _lock:
        _stats[key] += nbytes
        if key == "bytes_in_use":
            _stats["allocations" if nbytes > 0 else "frees"] += 1
            _stats["peak_bytes"] = max(_stats["peak_bytes"], _stats["bytes_in_use"])
            if nbytes > 0:
                _live[address] = nbytes
            else:
                _live.pop(address, None)


def account_lent(nbytes: int) -> None:
    """Adds ``nbytes`` (negative: takes away) to the bytes lent to other processes (arrowdev.cuda.leases)."""
    with _lock:
        _stats["bytes_lent"] += nbytes


def buffers_holding(addresses: Iterable[int]) -> dict[int, int]:
    """The live arrowdev device buffers (address -> size) that hold the given device addresses; addresses
    in no such buffer (memory of another library, imported zero-copy) are left out. For IPC exports: a
    sorted copy of the live buffers' addresses is made per call, not kept up to date on every allocation."""
    with _lock:
        starts = sorted(_live)
        sizes = [_live[a] for a in starts]
    found = {}
    for address in addresses:
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < starts[i] + max(sizes[i], 1):
            found[starts[i]] = sizes[i]
    return found


def reset_peak() -> None:
    """Makes ``memory_stats()["peak_bytes"]`` count from now: the bytes in use now become the peak."""
    with _lock:
        _stats["peak_bytes"] = _stats["bytes_in_use"]


def accounted_malloc(nbytes: int) -> Any:
    """A CuPy allocator (for ``cupy.cuda.set_allocator`` / ``using_allocator``) handing out arrowdev's
    accounted buffers on the current device and stream: CuPy's arrays then count in ``memory_stats()`` and
    obey ``set_limit``."""
    cp = runtime.cupy()
    buffer = DeviceBuffer(nbytes, cp.cuda.Device().id, cp.cuda.get_current_stream(), device_is_current=True)
    return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(buffer.ptr, max(nbytes, 1), buffer), 0)


def reserve_bytes(nbytes: int) -> None:
    """Counts ``nbytes`` of device memory arrowdev obtained outside its pool (a growing buffer,
    :mod:`.growable`) as in use, after checking the limit (MemoryError past it)."""
    _check_limit(nbytes)
    _account(nbytes)


def release_bytes(nbytes: int) -> None:
    """Counts ``nbytes`` reserved with :func:`reserve_bytes` as given back."""
    if nbytes:
        _account(-nbytes)


class DeviceBuffer:
    """``nbytes`` of device memory from arrowdev's pool on ``device_id``, allocated while
    ``stream`` is current (so the pool orders its reuse after that stream's work). The memory
    goes back to the pool when the last reference to this object goes. ``device_is_current``: the caller
    has checked that ``device_id`` is the current device (a UDF call does once, for all it does)."""

    __slots__ = ("ptr", "size", "device_id", "_mem", "__weakref__")

    def __init__(self, nbytes: int, device_id: int, stream: Any, device_is_current: bool = False) -> None:
        self.size = 0  # nothing to give back if the allocation fails
        _check_limit(nbytes)
        with runtime.ALREADY_CURRENT if device_is_current else runtime.on_device(device_id), stream:
            self._mem = pool().malloc(max(nbytes, 1))  # cupy's OutOfMemoryError is a MemoryError
        self.ptr, self.size, self.device_id = self._mem.ptr, nbytes, device_id
        _account(nbytes, address=self.ptr)
        if runtime.captures and stream.ptr in runtime.captures:  # captured work writes it at every replay
            runtime.captures[stream.ptr].keep(self)

    def __del__(self) -> None:
        if self.size:
            _account(-self.size, address=self.ptr)


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


def keep_until(sync: Any, *objects: Any) -> None:
    """Keeps ``objects`` (staging buffers, sources) alive until ``sync`` (a ``runtime.SyncEvent``) fires.

    Each call also drops what earlier calls held for events that fired: those at the front of the list,
    up to the first still pending (work queued on one stream finishes in order), and every
    ``_SWEEP_EVERY`` calls all of them (events of other streams). Asking every event on every call cost
    a query per event queued and not yet run: calls queued back to back slowed down as the GPU fell behind.
    The list holds the SyncEvent itself, so its CuPy event is not recycled while watched: recycled (the
    array holding it dropped) and recorded again by the next copy before that copy's look, the event at
    the front looked pending, and everything behind it (a staging ring per copy) waited, up to the sweep.
    """
    global _calls_since_sweep
    if runtime.captures:
        for graph in runtime.captures.values():
            if graph.records(sync.event):  # captured work reads them at every replay: kept as long as the graph
                graph.keep(objects)
                return
    with _lock:
        _watch.append((sync, objects))
        _calls_since_sweep += 1
        sweep = _calls_since_sweep >= _SWEEP_EVERY
    if sweep:
        release_finished()
        return
    with _lock:
        fired = 0
        while fired < len(_watch) and _watch[fired][0].event.done:
            fired += 1
        dropped = _watch[:fired]
        del _watch[:fired]
    del dropped  # dropped outside the lock: buffers' __del__ takes it


def release_finished() -> None:
    """Drops what :func:`keep_until` held for events that have fired."""
    global _calls_since_sweep
    with _lock:  # each event asked once: asked twice, an entry that fired in between would be dropped here
        states = [(sync.event.done, sync, objs) for sync, objs in _watch]
        _watch[:] = [(sync, objs) for done, sync, objs in states if not done]
        _calls_since_sweep = 0
    del states  # what fired is dropped outside the lock: buffers' __del__ takes it


runtime.after_host_waits.append(release_finished)


def memory_stats() -> dict[str, int]:
    """arrowdev's device memory accounting.

    - ``bytes_in_use``: bytes of arrowdev device buffers alive now; ``peak_bytes``: the most at once.
    - ``allocations`` / ``frees``: device buffers made / returned since the process started.
    - ``pinned_bytes_in_use``: page-locked host memory held (host copies of device data, staging).
    - ``pool_bytes``: device bytes the pool holds from the driver (in use or cached); 0 before
      the first GPU allocation.
    - ``bytes_lent``: of ``bytes_in_use``, the bytes of buffers exported through CUDA IPC whose exporting
      object is gone, kept for the other processes that hold leases on them (docs/memory.md); they go
      back to the pool when the last lease is released (unless other objects of this process, a slice of
      the exported table say, still hold them).
    """
    if _watch:  # even after the pool was swapped or reset: what is held must be counted as it really is
        release_finished()
    with _lock:
        out = dict(_stats)
    out["pool_bytes"] = _pool.total_bytes() if _pool is not None else 0
    return out
