"""numba-cuda External Memory Management plugin (NBEP 7) over arrowdev's pool.

``ad.cuda.use_for_numba()``, or ``NUMBA_CUDA_MEMORY_MANAGER=arrowdev.cuda.numba_emm`` set before numba
starts, makes numba's device arrays come from arrowdev's accounted pool, so numba arrays and arrowdev
buffers share one pool and ``ad.cuda.memory_stats()`` counts both.

- ``memalloc``: a block from arrowdev's pool (a ``DeviceBuffer``), wrapped in numba's ``MemoryPointer``
  whose finalizer gives the block back.
- Host memory (``memhostalloc``, ``mempin``, managed memory) is left to numba: the plugin derives from
  ``HostOnlyCUDAMemoryManager``.
- Deallocation: when numba drops a ``MemoryPointer`` its block goes back to the pool at once, not into a
  pending list flushed later as numba's own manager does (a pool free is cheap; ``cuMemFree`` is not).
  The pool orders the block's reuse after the legacy default stream's work (that stream was current when
  the block was allocated); work on non-blocking streams that may still read an array must be
  synchronised before the array is dropped, the same contract as RMM's numba plugin.
- ``defer_cleanup()``: while active, blocks dropped by numba are held, and all go back to the pool when
  the outermost ``defer_cleanup`` exits (numba uses it around asynchronous operations).
- ``get_ipc_handle``: numba's ``GetIpcHandleMixin``, which finds the base of the pool's underlying
  allocation (``cuMemGetAddressRange``) and records the sub-allocation's offset, as NBEP 7 asks for pools.
- ``get_memory_info``: the device's free and total memory (``cudaMemGetInfo``); blocks cached by the
  pool count as used.
- ``reset``: numba's host-side reset, then the pool's cached blocks are freed.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from numba.cuda.cudadrv.driver import GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer

from ..gpu import memory, runtime

__all__ = ["ArrowdevNumbaMemoryManager"]


class _Deferred:
    """Blocks held while a ``defer_cleanup`` is active (numba may use several nested)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.held: list[Any] = []


class ArrowdevNumbaMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """numba-cuda's EMM plugin interface (version 1), device memory from arrowdev's pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred = _Deferred()

    def initialize(self) -> None:
        memory.pool()  # made now, so a missing CuPy or GPU is reported when numba starts

    def memalloc(self, size: int) -> MemoryPointer:
        device_id = self.context.device.id
        block = memory.DeviceBuffer(size, device_id, runtime.cupy().cuda.Stream.null)
        return MemoryPointer(self.context, block.ptr, size, finalizer=_Giveback(block, self._deferred))

    def get_memory_info(self) -> MemoryInfo:
        free, total = runtime.cupy().cuda.runtime.memGetInfo()
        return MemoryInfo(free=free, total=total)

    def reset(self) -> None:
        super().reset()
        memory.pool().free_all_blocks()

    @contextlib.contextmanager
    def defer_cleanup(self) -> Iterator[None]:
        with super().defer_cleanup():
            with self._deferred.lock:
                self._deferred.depth += 1
            try:
                yield
            finally:
                with self._deferred.lock:
                    self._deferred.depth -= 1
                    released = self._deferred.held if self._deferred.depth == 0 else []
                    if self._deferred.depth == 0:
                        self._deferred.held = []
                del released  # the blocks go back to the pool here

    @property
    def interface_version(self) -> int:
        return 1


class _Giveback:
    """The finalizer of a numba MemoryPointer: returns its block to the pool, or holds it while a
    ``defer_cleanup`` is active."""

    def __init__(self, block: memory.DeviceBuffer, deferred: _Deferred) -> None:
        self.block: memory.DeviceBuffer | None = block
        self.deferred = deferred

    def __call__(self) -> None:
        block, self.block = self.block, None
        with self.deferred.lock:
            if self.deferred.depth:
                self.deferred.held.append(block)
                return
        del block


# The name numba looks up in a module named by NUMBA_CUDA_MEMORY_MANAGER.
_numba_memory_manager = ArrowdevNumbaMemoryManager
