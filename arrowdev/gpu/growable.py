"""Device memory that grows in place: a buffer whose final size is known only once it is full.

A UDF that makes strings learns how many bytes its output holds only after its last rows ran. Sizing the
output for the worst case wastes memory, and growing it by copying needs the old and the new buffer at
once (twice the output). CUDA's virtual memory management avoids both: a range of device addresses is
reserved (which costs no memory), and physical memory is created and mapped at the range's end as the
buffer fills, so the buffer stays one contiguous allocation, never moves and never holds more than its
contents plus the last step. The steps are at least the driver's granularity (2 MiB) and a sixteenth of
what is mapped already, so growing a buffer of any size takes a few dozen driver calls.

The bytes count in arrowdev's accounting (``ad.cuda.memory_stats()``, ``ad.cuda.set_limit``) as pool
buffers do. Freed, the memory is unmapped once the work queued on the buffer's stream until then has run (an
event, watched as the pool's stream-ordered frees are: :func:`.memory.keep_until`).

Such memory cannot be shared through ``cudaIpcGetMemHandle`` (CUDA's legacy IPC); :mod:`arrowdev.cuda.ipc`
copies it into pool memory when it exports it.
"""

from __future__ import annotations

import threading
from typing import Any

from . import memory, runtime

__all__ = ["GrowableBuffer", "is_growable"]

_live: dict[int, int] = {}  # base address -> bytes mapped, for is_growable (IPC export asks)
_live_lock = threading.Lock()


def _check(api: Any, result: Any, what: str) -> Any:
    err = result[0] if isinstance(result, tuple) else result
    if err != api.CUresult.CUDA_SUCCESS:
        if err == api.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise MemoryError(f"the GPU has no memory left for {what}")
        raise RuntimeError(f"{what} failed: {err.name}")
    return result[1] if isinstance(result, tuple) and len(result) == 2 else result


def is_growable(address: int) -> bool:
    """True when ``address`` lies in a live :class:`GrowableBuffer`."""
    if not _live:  # none live (the common case: no lock to take)
        return False
    with _live_lock:
        return any(base <= address < base + size for base, size in _live.items())


class _Mapping:
    """The physical memory mapped into a reserved range; unmapped and freed when dropped."""

    def __init__(self, api: Any, ptr: int, reserved: int) -> None:
        self.api, self.ptr, self.reserved = api, ptr, reserved
        self.handles: list[tuple[Any, int, int]] = []  # (physical allocation, offset, size)
        with _live_lock:
            _live[ptr] = 0

    def __del__(self) -> None:
        api = self.api
        try:
            for handle, offset, size in reversed(self.handles):
                api.cuMemUnmap(self.ptr + offset, size)
                api.cuMemRelease(handle)
                memory.release_bytes(size)  # one free per step, as each step counted one allocation
            api.cuMemAddressFree(self.ptr, self.reserved)
        except Exception:  # interpreter shutdown: the driver may be gone
            pass
        with _live_lock:
            _live.pop(self.ptr, None)


class GrowableBuffer:
    """``reserve`` bytes of device addresses on device ``device_id``; :meth:`grow_to` maps memory up to a
    size. ``ptr`` never changes. Grown from one thread at a time; freed when the last reference goes, after
    the work queued on ``stream`` by then."""

    def __init__(self, device_id: int, reserve: int, stream: Any) -> None:
        api = self._api = runtime.driver()
        self.device_id, self.stream = device_id, stream
        prop = api.CUmemAllocationProp()
        prop.type = api.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = api.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device_id
        self._prop = prop
        option = api.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
        self.granularity = int(_check(api, api.cuMemGetAllocationGranularity(prop, option), "asking the granularity"))
        self.reserved = self._round(max(reserve, 1))
        self.ptr = int(_check(api, api.cuMemAddressReserve(self.reserved, 0, 0, 0), "reserving device addresses"))
        self._mapping = _Mapping(api, self.ptr, self.reserved)
        self.mapped = 0

    def _round(self, nbytes: int) -> int:
        g = self.granularity
        return (nbytes + g - 1) // g * g

    def grow_to(self, nbytes: int) -> None:
        """At least ``nbytes`` usable from ``ptr``; MemoryError past the reservation, arrowdev's limit or the
        GPU's memory (nothing mapped by this call stays mapped then)."""
        if nbytes <= self.mapped:
            return
        if nbytes > self.reserved:
            raise MemoryError(f"a growable device buffer reserved for {self.reserved} bytes was asked for {nbytes}")
        step = min(self.reserved - self.mapped, self._round(max(nbytes - self.mapped, self.mapped // 16)))
        memory.reserve_bytes(step)  # arrowdev's limit and accounting, as a pool allocation
        try:
            self._map(step)
        except BaseException:
            memory.release_bytes(step)
            raise
        with _live_lock:
            _live[self.ptr] = self.mapped

    def _map(self, step: int) -> None:
        api = self._api
        handle = _check(api, api.cuMemCreate(step, self._prop, 0), f"creating {step} bytes of device memory")
        try:
            _check(api, api.cuMemMap(self.ptr + self.mapped, step, 0, handle, 0), "mapping device memory")
        except BaseException:
            api.cuMemRelease(handle)
            raise
        access = api.CUmemAccessDesc()
        access.location.type = api.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = self.device_id
        access.flags = api.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        try:
            _check(api, api.cuMemSetAccess(self.ptr + self.mapped, step, [access], 1), "opening device memory")
        except BaseException:
            api.cuMemUnmap(self.ptr + self.mapped, step)
            api.cuMemRelease(handle)
            raise
        self._mapping.handles.append((handle, self.mapped, step))
        self.mapped += step

    def __del__(self) -> None:
        mapping = getattr(self, "_mapping", None)
        if mapping is None or not mapping.handles or self.stream is None:
            return  # dropped with it: nothing was mapped, or no stream wrote to it
        try:
            memory.keep_until(runtime.SyncEvent(self.stream, self.device_id), mapping)
        except Exception:  # interpreter shutdown: unmapped as it goes
            pass
