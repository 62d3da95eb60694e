"""Compiling UDF kernels: the source :mod:`.codegen` generates for a :class:`~.spec.KernelSpec`, compiled by
numba (CPU target) or numba-cuda (CUDA target) with the UDF, cached per (function, closure, spec) in this
process and on disk (:mod:`.cache`)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from . import cache, codegen, deps, loads, nrt, probe
from .spec import KernelSpec, Target, function_key
from .strings import intrinsics as string_intrinsics

__all__ = ["cache_size", "compile_kernel"]

_lock = threading.Lock()
_cache: dict[tuple, Any] = {}


def compile_kernel(f: Callable, spec: KernelSpec) -> Any:
    """The compiled kernel (a numba dispatcher) for ``f`` and ``spec``, cached."""
    deps.require_compiler(spec.target)
    key = (function_key(f), spec)
    with _lock:
        if key in _cache:
            return _cache[key]
    probe.udf_result_type(f, spec)  # friendly errors, and the GPU check for `raise`
    namespace: dict[str, Any] = {"np": np, **string_intrinsics()[spec.target]}
    if spec.target == Target.CUDA:
        from numba import cuda

        udf = cuda.jit(device=True)(probe.prepared(f, Target.CUDA))
        namespace.update(cuda=cuda, udf=udf, load_streaming=loads.cuda_intrinsic())
        kernel = cuda.jit(_exec(codegen.kernel_source(spec), namespace))
        if spec.arena:
            nrt.NRT_KERNELS.add(kernel)
    else:
        import numba

        namespace["udf"] = numba.njit(error_model="numpy")(probe.prepared(f))
        namespace["half_to_float"] = numba.njit(codegen.half_to_float)
        kernel = numba.njit(error_model="numpy")(_exec(codegen.kernel_source(spec), namespace))
    # numba asks this hook before compiling a signature and hands it what it compiled (cache.py)
    kernel._cache = cache.KernelCache(cache.entry_key(f, ("kernel", spec)), spec.target)
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
