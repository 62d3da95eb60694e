"""Memory as UDF kernels take it: views of Arrow buffers, new buffers, launches and bit packing, on the CPU
(NumPy) or a GPU (``DeviceView`` s over arrowdev's pool, CuPy for packing)."""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

import numpy as np

from ...gpu import runtime
from ...gpu.memory import DeviceBuffer
from ...core.types import Device
from .launch import DeviceView, launch

__all__ = ["HOST_SCRATCH", "HostGrowable", "HostScratch", "Memory", "host_address"]

_STAND_INS: dict[tuple, Any] = {}


def host_address(array: np.ndarray) -> int:
    """The address of a writable host array's first byte, by a cheaper route than ``array.ctypes.data`` (small calls,
    a DuckDB vector's, ask for several)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(array)) if array.nbytes else array.ctypes.data


class Memory:
    """Array views and new buffers on the target (CPU: NumPy; CUDA: numba device arrays over
    arrowdev's pool)."""

    def __init__(self, device: Device, stream: Any = None) -> None:
        self.device = device
        self.gpu = device.type in ("cuda", "cuda_managed")
        if self.gpu:
            self.cp = runtime.cupy()
            self.stream = runtime.stream_for(device.id, stream)

    def on_device(self) -> Any:
        """A context for CuPy work of this call: the device, the stream, and arrowdev's accounted buffers for
        whatever CuPy allocates (so a call's temporaries count in ``memory_stats()`` and obey ``set_limit``)."""
        import contextlib

        if not self.gpu:
            return contextlib.nullcontext()
        from ...gpu import memory

        stack = contextlib.ExitStack()
        stack.enter_context(self.cp.cuda.Device(self.device.id))
        stack.enter_context(self.stream)
        stack.enter_context(self.cp.cuda.using_allocator(memory.accounted_malloc))
        return stack

    def view(self, address: int, count: int, dtype: np.dtype, owner: Any) -> Any:
        if not address:  # a NULL buffer (no validity, or an empty array): a stand-in the kernel never reads
            return self.stand_in(dtype)
        if self.gpu:
            return DeviceView(address, count, dtype, owner)
        raw = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(address)
        return np.frombuffer(raw, dtype=dtype)

    def constant_array(self, values: np.ndarray) -> Any:
        """A small array of ``values`` on this device (string_view buffer addresses)."""
        if not self.gpu:
            return values
        with self.on_device():
            on_device = self.cp.asarray(values)
        return self.view(on_device.data.ptr, len(values), values.dtype, on_device)

    def stand_in(self, dtype: np.dtype) -> Any:
        """A one-element array of ``dtype`` on this device, made once."""
        key = (self.device, np.dtype(dtype).str)
        if key not in _STAND_INS:  # outside arrowdev's accounting: it lives as long as the process
            if self.gpu:
                with self.cp.cuda.Device(self.device.id):
                    backing = self.cp.zeros(8, dtype=dtype)  # on CuPy's current stream: no kernel reads it
                _STAND_INS[key] = self.view(backing.data.ptr, 8, dtype, backing)
            else:
                _STAND_INS[key] = np.zeros(8, dtype=dtype)
        return _STAND_INS[key]

    def new(self, count: int, dtype: np.dtype) -> tuple[Any, int, Any]:
        """(kernel array, address, keep-alive) of a new buffer of ``count`` elements."""
        nbytes = count * np.dtype(dtype).itemsize
        if self.gpu:
            buf = DeviceBuffer(nbytes, self.device.id, self.stream)
            return self.view(buf.ptr, count, dtype, buf), buf.ptr, buf
        array = np.empty(max(count, 1), dtype=dtype)
        return array, host_address(array), array

    def scratch(self, count: int, dtype: np.dtype) -> tuple[Any, int, Any]:
        """As :meth:`new`, for a buffer the call drops before it returns (a string arena, the kernel's pairs and
        flags): on the CPU it comes from :data:`HOST_SCRATCH`, whose blocks keep their pages between calls; on a
        GPU from the pool, as :meth:`new`."""
        if self.gpu:
            return self.new(count, dtype)
        array = HOST_SCRATCH.take(max(count, 1), np.dtype(dtype))
        return array, host_address(array), array

    def part(self, array: Any, start: int, count: int) -> Any:
        """Elements [start, start + count) of an array :meth:`new` or :meth:`view` made, as a kernel takes
        them (a view, no copy)."""
        if self.gpu:
            return DeviceView(array.ptr + start * array.dtype.itemsize, count, array.dtype, array)
        return array[start:start + count]

    def growable(self, reserve: int) -> Any:
        """Bytes that grow in place as a UDF's output fills them (``grow_to``, ``ptr``): on a GPU CUDA's
        virtual memory (:class:`~arrowdev.gpu.growable.GrowableBuffer`, at most ``reserve`` bytes), on the CPU
        an anonymous mapping grown with ``mremap`` (:class:`HostGrowable`: its address may move as it grows)."""
        if self.gpu:
            from ...gpu.growable import GrowableBuffer

            return GrowableBuffer(self.device.id, reserve, self.stream)
        return HostGrowable()

    def launch(self, kernel: Any, n: int, args: list[Any], rows_per_thread: int = 1) -> None:
        if self.gpu:
            launch(kernel, n, args, self.stream.ptr, self.device.id, rows_per_thread)
        else:
            kernel(n, *args)

    def pack_bits(self, flags: Any, count: int, count_ones: bool) -> tuple[int, Any, int]:
        """(address, keep-alive, set bits) of the bitmap packing ``flags`` (one byte per row, any non-zero
        byte is a 1). Set bits are counted on the CPU only, when asked: on a GPU counting would
        synchronise, so -1 is returned and the count is made from the bitmap when someone asks for it."""
        if self.gpu:
            with self.on_device():
                packed = self.cp.packbits(self.cp.asarray(flags)[:count], bitorder="little")
            return packed.data.ptr, packed, -1
        array = np.asarray(flags[:count])
        packed = np.packbits(array, bitorder="little")
        return packed.ctypes.data, packed, int(np.count_nonzero(array)) if count_ones else 0

    def pack_bits_into(self, flags: Any, count: int, bitmap: Any, byte: int) -> int:
        """Packs the first ``count`` bytes of ``flags`` (non-zero: 1) into ``bitmap`` from byte ``byte`` on;
        the set bits (counted on the CPU; -1 on a GPU, where counting would synchronise)."""
        nbytes = (count + 7) // 8
        if self.gpu:
            with self.on_device():
                target = self.cp.asarray(self.part(bitmap, byte, nbytes))
                target[...] = self.cp.packbits(self.cp.asarray(flags)[:count], bitorder="little")
            return -1
        array = np.asarray(flags[:count])
        bitmap[byte:byte + nbytes] = np.packbits(array, bitorder="little")
        return int(np.count_nonzero(array))

    def valid_in_all(self, helds: list[Any], count: int) -> Any:
        """One byte per row, 1 where the row is valid in every one of the chunks ``helds`` (each has a validity
        bitmap). On a GPU every step is queued on this call's stream: an operator applied to CuPy arrays outside
        :meth:`on_device` runs on CUDA's legacy stream, which does not wait for this one (it read the unpacked
        bitmaps before the kernels writing them had run: rows came back null at random)."""
        xp = self.cp if self.gpu else np
        with self.on_device():
            combined = self._unpack_validity(xp, helds[0], count)
            for held in helds[1:]:
                xp.bitwise_and(combined, self._unpack_validity(xp, held, count), out=combined)
            return combined

    def _unpack_validity(self, xp: Any, held: Any, count: int) -> Any:
        """One byte per row (1 = valid) of a chunk's validity (inside :meth:`on_device` on a GPU)."""
        first, end = held.offset // 8, (held.offset + count + 7) // 8
        bits = self.view(held.buffers[0] + first, end - first, np.uint8, held)
        start = held.offset - 8 * first
        return xp.unpackbits(xp.asarray(bits), bitorder="little")[start:start + count]


class HostScratch:
    """Host blocks for buffers a UDF call drops before it returns, kept for the next call. A new NumPy buffer of
    megabytes is fresh pages, which the kernel zeroes on first touch: at 10^6 rows of a CPU string UDF (a 64 MB
    arena, 16 MB of pairs) that was a fifth of the call's time (docs/udf.md, "Memory"). A block goes back here
    when the array lent from it, and every view of that array, is gone; free blocks beyond ``keep_bytes`` are
    freed, and a request that no free block fits frees them all first, so idle blocks never sit beside a new
    allocation. Blocks under ``min_bytes`` come from NumPy: glibc's malloc serves those from its heap once a
    free of that size has raised its mapping threshold (up to 32 MiB), and keeping them here would stop that."""

    def __init__(self, keep_bytes: int = 256 << 20, min_bytes: int = 32 << 20) -> None:
        self.keep_bytes, self.min_bytes = keep_bytes, min_bytes
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, count: int, dtype: np.dtype) -> np.ndarray:
        """``count`` elements of ``dtype`` (contents undefined)."""
        nbytes = count * dtype.itemsize
        if nbytes < self.min_bytes:
            return np.empty(count, dtype)
        with self._lock:
            fits = [b for b in self._free if nbytes <= b.nbytes <= 2 * nbytes]
            if fits:
                block = min(fits, key=lambda b: b.nbytes)
                self._free = [b for b in self._free if b is not block]
            else:
                self._free = []  # the wrong sizes: freed before the new block is made
                block = None
        if block is None:
            block = np.empty(-(-nbytes // (1 << 20)) << 20, np.uint8)  # whole MiB
        lent = np.frombuffer(memoryview(block)[:nbytes], dtype, count)  # its views' base is `lent`, not `block`
        weakref.finalize(lent, self._give_back, block)
        return lent

    def _give_back(self, block: np.ndarray) -> None:
        with self._lock:
            if sum(b.nbytes for b in self._free) + block.nbytes <= self.keep_bytes:
                self._free.append(block)

    def free_bytes(self) -> int:
        """Bytes of free blocks held."""
        with self._lock:
            return sum(b.nbytes for b in self._free)

    def clear(self) -> None:
        """Frees the free blocks."""
        with self._lock:
            self._free = []


HOST_SCRATCH = HostScratch()


class HostGrowable:
    """CPU memory that grows without a copy: an anonymous mapping that ``mremap`` enlarges (the kernel moves
    the pages, so the bytes are never held twice); ``ptr`` may change at each :meth:`grow_to`. Unmapped
    when dropped."""

    _PROT = 0x1 | 0x2  # PROT_READ | PROT_WRITE
    _FLAGS = 0x02 | 0x20  # MAP_PRIVATE | MAP_ANONYMOUS
    _MAYMOVE = 1

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._mmap, self._mremap, self._munmap = libc.mmap, libc.mremap, libc.munmap
        self._mmap.restype = self._mremap.restype = ctypes.c_void_p
        self._mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_long]
        self._mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
        self._munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.ptr, self.mapped = 0, 0

    def grow_to(self, nbytes: int) -> None:
        """At least ``nbytes`` usable from ``ptr`` (MemoryError when the system has no more)."""
        if nbytes <= self.mapped:
            return
        size = max(nbytes, self.mapped + self.mapped // 16, 1 << 16)
        if self.ptr:
            moved = self._mremap(self.ptr, self.mapped, size, self._MAYMOVE)
        else:
            moved = self._mmap(None, size, self._PROT, self._FLAGS, -1, 0)
        if moved in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"could not map {size} bytes of host memory (errno {ctypes.get_errno()})")
        self.ptr, self.mapped = moved, size

    def __del__(self) -> None:
        if self.ptr:
            self._munmap(self.ptr, self.mapped)
            self.ptr = 0
