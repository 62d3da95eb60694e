"""A rolling window's array methods on the GPU: ``w.max()``, ``min``, ``mean``, ``std``, ``var``, ``prod``,
``argmax``, ``argmin``, ``any``, ``all``, as numba's CPU target has them.

numba-cuda types these methods for every array (its ``overload_method`` copies of NumPy's), but their
implementations use what a CUDA kernel has no use for (``np.nditer``, exceptions for empty arrays), so
``lambda w: w.max() - w.min()`` failed on a GPU column (``No implementation of function npy_max``). A
window on the GPU is therefore typed :class:`WindowArray`: an array type in every other respect (indexing,
``len``, loops, ``sum``, slices), whose methods above are arrowdev's, registered in arrowdev's own CUDA
registries (:mod:`.targets`) for this type only, so no other numba-cuda user sees them. The kernel makes
its window buffer one with :func:`as_window` (the same array, another type); a window is never empty
(rolling.py calls the UDF for at least one value). Results follow NumPy's types and NaN rules as numba's
CPU target computes them: ``mean`` of integers and bools is float64, ``std`` and ``var`` are float64
(population, ``ddof=0``), ``prod`` of integers is int64 (uint64 for unsigned), a NaN wins ``max`` / ``min``
and ``argmax`` / ``argmin`` points at the first one.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = ["METHODS", "as_window", "window_type"]

METHODS = ("max", "min", "mean", "std", "var", "prod", "argmax", "argmin", "any", "all")


def _max(a):  # noqa: ANN001, ANN202  (compiled by numba, typed by the registered signatures)
    best = a[0]
    if best != best:
        return best
    for i in range(1, len(a)):
        v = a[i]
        if v != v:
            return v
        if v > best:
            best = v
    return best


def _min(a):  # noqa: ANN001, ANN202
    best = a[0]
    if best != best:
        return best
    for i in range(1, len(a)):
        v = a[i]
        if v != v:
            return v
        if v < best:
            best = v
    return best


def _argmax(a):  # noqa: ANN001, ANN202
    best, where = a[0], 0
    if best != best:
        return 0
    for i in range(1, len(a)):
        v = a[i]
        if v != v:
            return i
        if v > best:
            best, where = v, i
    return where


def _argmin(a):  # noqa: ANN001, ANN202
    best, where = a[0], 0
    if best != best:
        return 0
    for i in range(1, len(a)):
        v = a[i]
        if v != v:
            return i
        if v < best:
            best, where = v, i
    return where


def _mean(a):  # noqa: ANN001, ANN202
    total = 0.0
    for i in range(len(a)):
        total += a[i]
    return total / len(a)


def _var(a):  # noqa: ANN001, ANN202  (each compiled alone: no calls between them)
    m = 0.0
    for i in range(len(a)):
        m += a[i]
    m /= len(a)
    total = 0.0
    for i in range(len(a)):
        d = a[i] - m
        total += d * d
    return total / len(a)


def _std(a):  # noqa: ANN001, ANN202
    m = 0.0
    for i in range(len(a)):
        m += a[i]
    m /= len(a)
    total = 0.0
    for i in range(len(a)):
        d = a[i] - m
        total += d * d
    return math.sqrt(total / len(a))


def _prod_signed(a):  # noqa: ANN001, ANN202
    total = 1
    for i in range(len(a)):
        total *= a[i]
    return total


def _prod_unsigned(a):  # noqa: ANN001, ANN202
    total = np.uint64(1)
    for i in range(len(a)):
        total *= np.uint64(a[i])
    return total


def _prod_float(a):  # noqa: ANN001, ANN202
    total = 1.0
    for i in range(len(a)):
        total *= a[i]
    return total


def _any(a):  # noqa: ANN001, ANN202
    for i in range(len(a)):
        if a[i]:
            return True
    return False


def _all(a):  # noqa: ANN001, ANN202
    for i in range(len(a)):
        if not a[i]:
            return False
    return True


def _result(name: str, dtype: Any) -> Any:
    """The type numba's CPU target gives ``name`` on an array of ``dtype``."""
    from numba.core import types

    is_float = isinstance(dtype, types.Float)
    if name in ("max", "min"):
        return dtype
    if name in ("argmax", "argmin"):
        return types.int64
    if name in ("any", "all"):
        return types.boolean
    if name == "mean":
        return dtype if is_float else types.float64
    if name in ("std", "var"):
        return types.float64
    if is_float:
        return dtype
    return types.uint64 if isinstance(dtype, types.Integer) and not dtype.signed else types.int64


def _impl(name: str, dtype: Any) -> Any:
    from numba.core import types

    if name == "prod":
        if isinstance(dtype, types.Float):
            return _prod_float
        return _prod_unsigned if isinstance(dtype, types.Integer) and not dtype.signed else _prod_signed
    impls = {"max": _max, "min": _min, "argmax": _argmax, "argmin": _argmin, "mean": _mean, "var": _var,
             "std": _std, "any": _any, "all": _all}
    return impls[name]


@functools.cache
def window_type() -> Any:
    """The :class:`WindowArray` type class (made on first use: numba-cuda is imported only for GPU UDFs)."""
    from numba.core import types

    class WindowArray(types.Array):
        """A rolling window: a 1-D array whose listed methods arrowdev implements for the GPU."""

        def __init__(self, dtype: Any, ndim: int = 1, layout: str = "C", readonly: bool = False,
                     name: str | None = None, aligned: bool = True) -> None:
            super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                             name=name or f"window({dtype}, {ndim}d, {layout})")

        def copy(self, dtype: Any = None, ndim: Any = None, layout: Any = None, readonly: Any = None) -> Any:
            return WindowArray(self.dtype if dtype is None else dtype, self.ndim if ndim is None else ndim,
                               self.layout if layout is None else layout,
                               self.mutable is False if readonly is None else readonly)

    return WindowArray


@functools.cache
def as_window() -> Any:
    """The stub the CUDA kernel calls to type its window buffer as a :class:`WindowArray` (registered
    with arrowdev's CUDA registries, with the methods, on first use)."""
    from .targets import cuda_target

    target = cuda_target()
    if target is None:  # the caller compiles for CUDA, which needs numba-cuda: deps.require_compiler said so
        raise RuntimeError("rolling windows on a GPU need numba-cuda")
    stub = _register(target)
    target.install()
    return stub


def _register(target: Any) -> Any:
    from numba.core import types
    from numba.cuda.core.imputils import impl_ret_borrowed

    window = window_type()
    target.register_model(window)(target.models.ArrayModel)
    templates = target.templates

    def method(name: str) -> Any:
        def resolve(self: Any, ary: Any, args: tuple, kws: dict) -> Any:
            if not args and not kws and ary.ndim == 1:
                return templates.signature(_result(name, ary.dtype))
            return None

        return templates.bound_function(f"arrowdev.window.{name}")(resolve)

    # cuda-specific templates are tried before generic ones, and a WindowArray's own before types.Array's
    attributes = {f"resolve_{name}": method(name) for name in METHODS}
    target.infer_getattr(type("WindowAttributes", (templates.AttributeTemplate,),
                              {"key": window, "metadata": {"target": "cuda"}, **attributes}))

    def lower(name: str) -> None:
        def implement(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return context.compile_internal(builder, _impl(name, sig.args[0].dtype), sig, args)

        target.lower_builtin(f"arrowdev.window.{name}", window)(implement)

    for name in METHODS:
        lower(name)

    @target.intrinsic
    def as_window(typingctx: Any, array: Any) -> Any:
        if not isinstance(array, types.Array) or array.ndim != 1:
            return None
        result = window(array.dtype, 1, array.layout, readonly=not array.mutable)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return impl_ret_borrowed(context, builder, sig.return_type, args[0])

        return result(array), codegen

    return as_window
