"""Launching compiled UDF kernels on a GPU with little host work per call.

A kernel's :class:`~.spec.KernelSpec` fixes every argument type, so each kernel is specialised
once (numba types the arguments and links the code on the first launch) and every later launch
skips numba's per-call work: arguments are packed as numba lays them out into one parameter block and
handed to the driver's ``cuLaunchKernel`` (cuda-python). Device arrays are :class:`DeviceView` s (address,
length, dtype, owner) rather than numba device arrays, which are slow to make (numba checks the CUDA context for each one); they become numba
arrays only when numba itself launches. docs/udf.md has the measured host time per call.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from typing import Any

import numpy as np

from ...gpu import runtime
from ..compile import nrt

THREADS = 256
NUMBA_MIN_GRID = 128  # numba-cuda's launch warns below this many blocks (NumbaPerformanceWarning)
_lock = threading.Lock()
# numba-cuda loads a kernel's module into a context at its first launch there, unguarded: two threads launching
# the same new kernel at once both loaded the one module ("key already in dictionary: <CUlibrary ...>", seen with
# Polars calling a GPU UDF). Every first binding in a context happens under this lock.
_bind_lock = threading.RLock()
_bound: set[tuple[Any, int]] = set()  # (specialised, device id) bound under _bind_lock
_specialized: dict[Any, Any] = {}  # kernel -> numba dispatcher specialised to its one signature
_direct: dict[tuple[Any, int], _DirectEntry] = {}  # (specialised, device id) -> how to launch it directly
_driver: Any = None  # cuda.bindings.driver, imported with the first direct launch


class DeviceView:
    """A 1-D C-contiguous array in device memory as kernels take it; ``owner`` keeps it alive.
    Speaks ``__cuda_array_interface__`` (CuPy and numba read it zero-copy)."""

    __slots__ = ("ptr", "size", "dtype", "owner")

    def __init__(self, ptr: int, size: int, dtype: Any, owner: Any) -> None:
        self.ptr, self.size, self.dtype, self.owner = ptr, size, np.dtype(dtype), owner

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None}

    def to_numba(self) -> Any:
        """A numba device array over the same memory (inside the device's context)."""
        from numba import cuda

        return cuda.from_cuda_array_interface(self.__cuda_array_interface__, owner=self, sync=False)


def launch(kernel: Any, n: int, args: list[Any], stream_ptr: int, device_id: int, rows_per_thread: int = 1) -> None:
    """Launches ``kernel(n, *args)`` with enough threads of THREADS per block for ``n`` rows, each
    thread taking ``rows_per_thread`` rows (in the device's context, on stream ``stream_ptr``)."""
    blocks = grid_blocks(n, rows_per_thread)
    specialized = _specialized.get(kernel)
    if specialized is not None and _launch_direct(specialized, device_id, blocks, stream_ptr, [n, *args]):
        return
    from numba import cuda
    from numba.cuda.core.errors import NumbaPerformanceWarning

    with _gpus(cuda)[device_id], warnings.catch_warnings():
        numba_args = [a.to_numba() if isinstance(a, DeviceView) else a for a in args]
        # one thread per row: a small column gets a small grid, which numba warns about
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        if specialized is None:
            specialized = _specialize(kernel, n, numba_args)
            with _lock:
                _specialized[kernel] = specialized
        _bind_once(specialized, device_id)
        # numba warns of grids under 128 blocks, and catch_warnings is process-wide state that another thread
        # (a Dask worker's) may restore mid-launch: the grid is padded instead (threads past n do nothing)
        specialized[max(blocks, NUMBA_MIN_GRID), THREADS, cuda.external_stream(stream_ptr)](n, *numba_args)


_gpus_listed = False


def _gpus(cuda: Any) -> Any:
    """numba-cuda's device list, filled once under a lock: numba-cuda fills it lazily and unguarded, and
    two threads of a Dask worker launching their first kernels at once both filled it ("key already in
    dictionary: 0")."""
    global _gpus_listed
    if not _gpus_listed:
        with _lock:
            cuda.gpus.lst  # the property that fills the list
            _gpus_listed = True
    return cuda.gpus


def _bind_once(specialized: Any, device_id: int) -> None:
    """Loads ``specialized``'s module into the current context (device ``device_id``'s) once, under
    :data:`_bind_lock`."""
    key = (specialized, device_id)
    if key in _bound:
        return
    with _bind_lock:
        if key not in _bound:
            for compiled in specialized.overloads.values():
                compiled.bind()
            _bound.add(key)


def _specialize(kernel: Any, n: int, args: list[Any]) -> Any:
    """``kernel`` compiled and linked for these argument types; with numba-cuda's runtime (NRT) on for
    kernels that make managed strings, so their MemInfos are counted (NRT is read at compile and link
    time, and is otherwise left as the user set it)."""
    if kernel not in nrt.NRT_KERNELS:
        return _specialize_cached(kernel, [n, *args])
    with nrt.cuda_nrt(), _bind_lock:
        specialized = _specialize_cached(kernel, [n, *args])
        for compiled in specialized.overloads.values():
            compiled.bind()
    return specialized


def _specialize_cached(kernel: Any, args: list[Any]) -> Any:
    """``kernel.specialize(*args)``, with the kernel's disk cache (udf/cache.py) handed to the specialised
    dispatcher, which numba-cuda makes with none: what its ``specialize`` does, plus the cache. Where that
    dispatcher's private state is not as expected, numba-cuda's own ``specialize`` runs (no disk cache)."""
    disk = getattr(kernel, "_cache", None)
    if disk is None or not hasattr(kernel, "_specialized") or not hasattr(kernel, "targetoptions"):
        return kernel.specialize(*args)
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    specialized = type(kernel)(kernel.py_func, targetoptions=kernel.targetoptions)
    specialized._cache = disk
    specialized.compile(argtypes)
    specialized.disable_compile()
    specialized._specialized = True
    return specialized


def _launch_direct(specialized: Any, device_id: int, blocks: int, stream_ptr: int, args: list[Any]) -> bool:
    """Launches with the driver's ``cuLaunchKernel``, the arguments packed as numba packs them (an array:
    meminfo, parent, size, itemsize, data, shape, stride; an integer: its C type) into this thread's
    parameter block. False, launching nothing, when an argument is not of that form (numba then launches)."""
    entry = _direct.get((specialized, device_id))
    if entry is None:
        from numba import cuda

        with _bind_lock, _gpus(cuda)[device_id]:
            entry = _direct.get((specialized, device_id))
            if entry is None:
                entry = _direct_entry(specialized)
                _bound.add((specialized, device_id))
                with _lock:
                    _direct[(specialized, device_id)] = entry
    if entry.layout is None:
        return False
    flat: list[Any] = []
    for is_array, value in zip(entry.arrays, args):
        if is_array:
            if type(value) is not DeviceView:
                return False
            size, item = value.size, value.dtype.itemsize
            flat += (0, 0, size, item, value.ptr, size, item)
        else:
            flat.append(value)
    launch_flat(entry, device_id, blocks, stream_ptr, flat)
    return True


def direct_entry(kernel: Any, device_id: int) -> _DirectEntry | None:
    """How to launch ``kernel`` directly on ``device_id``, once a launch made it (None before, or where its
    arguments are of a form only numba passes)."""
    specialized = _specialized.get(kernel)
    entry = None if specialized is None else _direct.get((specialized, device_id))
    return entry if entry is not None and entry.layout is not None else None


def launch_flat(entry: _DirectEntry, device_id: int, blocks: int, stream_ptr: int, flat: list[Any],
                device_is_current: bool = False) -> None:
    """Launches ``entry``'s kernel with its parameters already flat (each array as its seven fields);
    ``device_is_current``: the caller has checked that ``device_id`` is the current device."""
    block, params = entry.layout.block()
    entry.layout.packer.pack_into(block, 0, *flat)
    # the launch goes to the current context: the device's
    with runtime.ALREADY_CURRENT if device_is_current else runtime.on_device(device_id):
        err = _driver.cuLaunchKernel(entry.function, blocks, 1, 1, THREADS, 1, 1, 0, stream_ptr, params, 0)[0]
    if err != _driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"expected the UDF kernel to launch on device {device_id} ({blocks} blocks of "
                           f"{THREADS} threads), but cuLaunchKernel returned {err.name}")


def grid_blocks(n: int, rows_per_thread: int = 1) -> int:
    """Blocks of THREADS threads for ``n`` rows, ``rows_per_thread`` rows a thread (whole warps)."""
    warps = -(-n // (32 * rows_per_thread))
    return max(1, -(-warps * 32 // THREADS))


class _ParamLayout:
    """A kernel's parameters as one C-laid-out block (``struct`` format ``fmt``, native alignment) and the
    ``void*[]`` of their addresses that ``cuLaunchKernel`` reads; one block per thread (the driver copies the
    parameters during the call, so a thread reuses its block)."""

    def __init__(self, fmt: str) -> None:
        import struct

        self.packer = struct.Struct(fmt)
        codes = fmt[1:]
        self.offsets = [struct.calcsize("@" + codes[:i + 1]) - struct.calcsize("@" + codes[i]) for i in range(len(codes))]
        self._local = threading.local()

    def block(self) -> tuple[Any, int]:
        """(this thread's parameter block, address of its ``void*[]``)."""
        made = getattr(self._local, "made", None)
        if made is None:
            raw = ctypes.create_string_buffer(max(self.packer.size, 8))
            base = ctypes.addressof(raw)
            pointers = (ctypes.c_void_p * len(self.offsets))(*[base + off for off in self.offsets])
            made = self._local.made = (raw, ctypes.addressof(pointers), pointers)
        return made[0], made[1]


class _DirectEntry:
    """What a direct launch of one specialised kernel needs: the driver's kernel handle, which arguments are
    arrays, and the parameter layout (None where an argument is of a form only numba can pass)."""

    __slots__ = ("function", "arrays", "layout")

    def __init__(self, function: int, arrays: list[bool], layout: _ParamLayout | None) -> None:
        self.function, self.arrays, self.layout = function, arrays, layout


def _direct_entry(specialized: Any) -> _DirectEntry:
    """The direct launch of ``specialized`` in the current context: each argument a 1-D C-contiguous array
    (seven 8-byte fields) or an integer of its C type; a layout of None for anything else."""
    global _driver
    from numba.core import types

    if _driver is None:
        _driver = runtime.driver()
    compiled = next(iter(specialized.overloads.values()))
    compiled.bind()  # what numba does before a first launch in a context (module globals, NRT memsys)
    fmt, arrays = "@", []
    for ty in compiled.argument_types:
        if isinstance(ty, types.Array) and ty.ndim == 1 and ty.layout == "C":
            fmt += "QQqqQqq"
            arrays.append(True)
        elif isinstance(ty, types.Integer) and str(ty) in _INT_CODES:
            fmt += _INT_CODES[str(ty)]
            arrays.append(False)
        else:
            return _DirectEntry(0, [], None)
    kernel = compiled._codelibrary.get_cufunc().kernel  # a cuda.core Kernel: its handle is a CUkernel
    return _DirectEntry(int(kernel.handle), arrays, _ParamLayout(fmt))


_INT_CODES = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
              "uint64": "Q"}
