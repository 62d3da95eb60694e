"""Compiling UDF kernels: the source :mod:`.codegen` generates for a :class:`~.spec.KernelSpec`, compiled by
numba (CPU target) or numba-cuda (CUDA target) with the UDF, cached per (function, closure, spec) in this
process and on disk (:mod:`.cache`)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from . import cache, codegen, loads, nrt, probe
from .. import deps
from ..spec import UDF, KernelSpec, Target
from .strings import intrinsics as string_intrinsics

__all__ = ["cache_size", "compile_kernel"]

_lock = threading.Lock()
_cache: dict[tuple, Any] = {}


def compile_kernel(f: Callable | UDF, spec: KernelSpec) -> Any:
    """The compiled kernel (a numba dispatcher) for UDF ``f`` and ``spec``, cached."""
    deps.require_compiler(spec.target)
    udf = UDF.of(f)
    key = (udf.key, spec)
    with _lock:
        if key in _cache:
            return _cache[key]
    probe.udf_result_type(udf, spec)  # friendly errors, and the GPU check for `raise`
    namespace: dict[str, Any] = {"np": np, **string_intrinsics()[spec.target]}
    if spec.target == Target.CUDA:
        from numba import cuda

        device_udf = cuda.jit(device=True)(probe.prepared(udf.f, Target.CUDA))
        namespace.update(cuda=cuda, udf=device_udf, load_streaming=loads.cuda_intrinsic())
        if spec.window:
            from .window_methods import as_window

            namespace["as_window"] = as_window()
        kernel = cuda.jit(_exec(codegen.kernel_source(spec), namespace))
        if spec.arena:
            nrt.NRT_KERNELS.add(kernel)
    else:
        import numba

        namespace["udf"] = numba.njit(error_model="numpy")(probe.prepared(udf.f))
        namespace["half_to_float"] = numba.njit(codegen.half_to_float)
        # without the GIL: engines call a UDF from several threads at once (DuckDB), and a string-making kernel
        # keeps its arena in the calling thread's slots (strings/managed.py)
        kernel = numba.njit(error_model="numpy", nogil=True)(_exec(codegen.kernel_source(spec), namespace))
    # numba asks this hook before compiling a signature and hands it what it compiled (cache.py)
    kernel._cache = cache.KernelCache(cache.entry_key(udf, ("kernel", spec)), spec.target)
    with _lock:
        _cache[key] = kernel
    return kernel


def _exec(source: str, namespace: dict[str, Any]) -> Callable:
    # an importable module name: numba records it in the compiled code's environment, and a kernel
    # loaded from the disk cache finds its environment again through it
    namespace.setdefault("__name__", __name__)
    exec(compile(source, "<arrowdev udf kernel>", "exec"), namespace)
    return namespace["kernel"]


def cache_size() -> int:
    """Compiled kernels held (a second call with the same UDF and input types adds none)."""
    return len(_cache)
