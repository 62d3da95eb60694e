"""Memory as UDF kernels take it: views of Arrow buffers, new buffers, launches and bit packing, on the CPU
(NumPy) or a GPU (``DeviceView`` s over arrowdev's pool, CuPy for packing)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..cuda import runtime
from ..cuda.memory import DeviceBuffer
from ..types import Device
from .launch import DeviceView, launch

__all__ = ["Memory"]

_STAND_INS: dict[tuple, Any] = {}


class Memory:
    """Array views and new buffers on the target (CPU: NumPy; CUDA: numba device arrays over
    arrowdev's pool)."""

    def __init__(self, device: Device, stream: Any = None) -> None:
        self.device = device
        self.gpu = device.type in ("cuda", "cuda_managed")
        if self.gpu:
            self.cp = runtime.cupy()
            self.stream = runtime.stream_for(device.id, stream)

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
        with self.cp.cuda.Device(self.device.id), self.stream:
            on_device = self.cp.asarray(values)
        return self.view(on_device.data.ptr, len(values), values.dtype, on_device)

    def stand_in(self, dtype: np.dtype) -> Any:
        """A one-element array of ``dtype`` on this device, made once."""
        key = (self.device, np.dtype(dtype).str)
        if key not in _STAND_INS:  # outside arrowdev's accounting: it lives as long as the process
            if self.gpu:
                with self.cp.cuda.Device(self.device.id):
                    backing = self.cp.zeros(8, dtype=dtype)
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
        return array, array.ctypes.data, array

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
            with self.cp.cuda.Device(self.device.id), self.stream:
                packed = self.cp.packbits(self.cp.asarray(flags)[:count], bitorder="little")
            return packed.data.ptr, packed, -1
        array = np.asarray(flags[:count])
        packed = np.packbits(array, bitorder="little")
        return packed.ctypes.data, packed, int(np.count_nonzero(array)) if count_ones else 0

    def unpack_validity(self, held: Any, count: int) -> Any:
        """One byte per row (1 = valid) of a chunk's validity."""
        first, end = held.offset // 8, (held.offset + count + 7) // 8
        bits = self.view(held.buffers[0] + first, end - first, np.uint8, held)
        start = held.offset - 8 * first
        if self.gpu:
            with self.cp.cuda.Device(self.device.id), self.stream:
                return self.cp.unpackbits(self.cp.asarray(bits), bitorder="little")[start:start + count]
        return np.unpackbits(np.asarray(bits), bitorder="little")[start:start + count]
