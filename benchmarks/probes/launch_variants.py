"""Probe (GPU): host microseconds of the steps before a UDF kernel starts, each alone in a loop (1 000 rows,
so kernels finish long before the launch queue fills): the driver's ``cuLaunchKernel`` through cuda-python
on the kernel's CUkernel handle, on the CUfunction of the current context, and through ctypes on libcuda
directly; arrowdev's whole ``launch``; an output buffer from the pool; a stream wait on an event.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/launch_variants.py
"""
import ctypes
import statistics
import time

import cupy as cp
import numpy as np

import arrowdev as ad
from arrowdev.core import chunks as _chunked
from arrowdev.gpu import memory, runtime
from arrowdev.udf.run import launch
from arrowdev.udf.run import plan as udf_plan
from arrowdev.udf.run.inputs import Input
from arrowdev.udf.run.buffers import Memory
from arrowdev.udf.run.output import ChunkOutput
from arrowdev.udf.spec import Target


def per_call_us(fn, calls=3000, rounds=5):
    fn()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
        cp.cuda.runtime.deviceSynchronize()
    return statistics.median(samples)


def main():
    rows = 1000
    x = cp.arange(rows, dtype=cp.float64)
    col = ad.column(x)
    f = lambda v: v * 2 + 1  # noqa: E731
    col.apply(f)
    col.apply(f)  # the first launch goes through numba; the second makes the direct launch's entry
    stream = runtime.stream_for(0)
    held = _chunked.chunks(col)[0]
    inputs = [Input(col.type, held, 0)]
    mem = Memory(col.device)
    plan = udf_plan.plan_for(f, inputs, Target.CUDA, False, None, None, "string")
    out = ChunkOutput(mem, plan, rows, 0)
    args = [out.pad, out.values, out.flags, np.int64(0), *inputs[0].kernel_args(mem, rows)]
    specialized = launch._specialized[plan.kernel]
    entry = launch._direct[(specialized, 0)]
    flat = []
    for is_array, value in zip(entry.arrays, [rows, *args]):
        if is_array:
            flat += (0, 0, value.size, value.dtype.itemsize, value.ptr, value.size, value.dtype.itemsize)
        else:
            flat.append(value)
    block, params = entry.layout.block()
    entry.layout.packer.pack_into(block, 0, *flat)
    drv = runtime.driver()
    blocks = 4
    err, function = drv.cuKernelGetFunction(drv.CUkernel(entry.function))
    libcuda = ctypes.CDLL("libcuda.so.1")
    raw = libcuda.cuLaunchKernel
    raw.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    raw.restype = ctypes.c_int
    function_int = int(function)
    event = runtime.SyncEvent(stream, 0)
    handle = ctypes.c_void_p.from_address(event.address).value
    parts = {
        "cuda-python cuLaunchKernel (CUkernel)":
            lambda: drv.cuLaunchKernel(entry.function, blocks, 1, 1, 256, 1, 1, 0, stream.ptr, params, 0),
        "cuda-python cuLaunchKernel (CUfunction)":
            lambda: drv.cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1, 0, stream.ptr, params, 0),
        "ctypes libcuda cuLaunchKernel (CUkernel)":
            lambda: raw(entry.function, blocks, 1, 1, 256, 1, 1, 0, stream.ptr, params, None),
        "ctypes libcuda cuLaunchKernel (CUfunction)":
            lambda: raw(function_int, blocks, 1, 1, 256, 1, 1, 0, stream.ptr, params, None),
        "struct pack_into of the parameters": lambda: entry.layout.packer.pack_into(block, 0, *flat),
        "layout.block() (thread-local)": lambda: entry.layout.block(),
        "launch.launch_flat (device current)": lambda: launch.launch_flat(entry, 0, blocks, stream.ptr, flat, True),
        "with runtime.ALREADY_CURRENT": lambda: _enter(runtime.ALREADY_CURRENT),
        "with stream (CuPy stream enter/exit)": lambda: _enter(stream),
        "cuda-python cuLaunchKernel + error check": lambda: _checked(drv, entry.function, blocks, stream.ptr, params),
        "launch.launch (whole direct path)": lambda: launch.launch(plan.kernel, rows, args, stream.ptr, 0),
        "DeviceBuffer(8 kB)": lambda: memory.DeviceBuffer(8 * rows, 0, stream),
        "pool().malloc inside `with stream`": lambda: _malloc_in(stream),
        "streamWaitEvent (CuPy)": lambda: cp.cuda.runtime.streamWaitEvent(stream.ptr, handle, 0),
        "runtime.on_device(0) enter/exit": lambda: _enter(runtime.on_device(0)),
        "col.apply(f) whole": lambda: col.apply(f),
    }
    for name, fn in parts.items():
        print(f"{name:45s} {per_call_us(fn):7.2f} us/call", flush=True)


def _checked(drv, function, blocks, stream_ptr, params):
    err = drv.cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1, 0, stream_ptr, params, 0)[0]
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(err)


def _malloc_in(stream):
    with stream:
        return memory.pool().malloc(8000)


def _enter(context):
    with context:
        pass


if __name__ == "__main__":
    main()
