"""The typing probe: a UDF compiled alone for its target, to learn its result type and whether it makes
strings or may fail a row (:class:`~.spec.UDFTraits`), before its kernel is generated. Kept in memory
per process and on disk (:mod:`.cache`)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from ...errors import DeviceUnavailableError
from . import cache
from .. import deps, na
from .compile_errors import UDFCompileError, describe, friendly, raises, toolkit_missing
from .constant_sets import with_constant_sets
from ..spec import UDF, Kind, KernelSpec, NullMode, Target, UDFTraits
from .strings import intrinsics as string_intrinsics
from .strings import with_string_constants

__all__ = ["CI_COMPUTE_CAPABILITY", "prepared", "udf_result_type", "udf_traits"]

_lock = threading.Lock()
_result_cache: dict[tuple, Any] = {}
CI_COMPUTE_CAPABILITY = (9, 0)  # for compile_ptx where no GPU says which to use


def _numba_args(spec: KernelSpec) -> tuple:
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    args = []
    for dtype, has_validity in spec.inputs:
        if dtype.is_string:
            string_intrinsics()[spec.target]  # the string types' typing and lowering, registered once
            base = _string_view()
        elif dtype == Kind.FLOAT16 and spec.target == Target.CPU:
            base = types.float32  # numba's CPU target has no float16: the kernel widens the bits exactly
        else:
            base = types.boolean if dtype == Kind.BITS else from_dtype(np.dtype(dtype))
        args.append(types.optional(base) if spec.null_mode == NullMode.AWARE and has_validity else base)
    if spec.window:
        element = args[0] if not isinstance(args[0], types.Optional) else args[0].type
        if spec.target == Target.CUDA:  # the window's methods on the GPU are arrowdev's (window_methods.py)
            from .window_methods import as_window, window_type

            as_window()  # registers the type and its methods with the CUDA target, once
            return (window_type()(element, 1, "C"),)
        return (types.Array(element, 1, "C"),)
    return tuple(args)


def _string_view() -> Any:
    from .strings.numba_types import string_types

    return string_types().string_view


def prepared(f: Callable, target: Target = Target.CPU) -> Callable:
    """The UDF as numba compiles it: constant number sets and string literals swapped for typed
    constants (:mod:`.constant_sets`, :mod:`.strings.literals`); same meaning in plain Python."""
    return with_string_constants(with_constant_sets(f, target))


def udf_result_type(f: Callable | UDF, spec: KernelSpec) -> Any:
    """The numba type the UDF returns for these inputs (see :func:`udf_traits`)."""
    return udf_traits(f, spec).result


def udf_traits(f: Callable | UDF, spec: KernelSpec) -> UDFTraits:
    """The UDF's result type and what its code needs, from the target's own typing and lowering. For
    CUDA this is ``numba.cuda.compile_ptx(..., device=True)``: it types and lowers the UDF without a
    GPU, so CI catches what the CUDA target cannot compile. Allocation and row failure are read off
    the compiled code: they reference the arena state or the row-failure flags (strings/managed.py)."""
    deps.require_compiler(spec.target)
    na.register_numba_typing(spec.target)
    string_intrinsics()[spec.target]  # string types and literals: registered with the target once
    udf = UDF.of(f)
    f = udf.f
    key = (udf.key, spec.inputs, spec.null_mode, spec.target, spec.window)
    with _lock:
        if key in _result_cache:
            return _result_cache[key]
    if spec.target == Target.CUDA and raises(f):
        raise UDFCompileError(f"cannot compile {describe(f)}: `raise` is not supported on the GPU "
                              "(numba-cuda does not report exceptions from kernels); return ad.NA instead")
    args = _numba_args(spec)
    disk_key = cache.entry_key(udf, ("traits", *key[1:]))
    traits = _decode_traits(cache.load_entry(disk_key))
    if traits is None:
        traits = _probe(f, spec, args)
        cache.store_entry(disk_key, _encode_traits(traits))
    else:
        cache.count_load()
    with _lock:
        _result_cache[key] = traits
    return traits


def _probe(f: Callable, spec: KernelSpec, args: tuple) -> UDFTraits:
    """Compiles the UDF alone for the target (see :func:`udf_traits`)."""
    cache.count_compilation()
    compiled = prepared(f, spec.target)
    try:
        if spec.target == Target.CUDA:
            from numba import cuda

            code, result = cuda.compile_ptx(compiled, args, device=True, cc=_compute_capability())
        else:
            import numba

            jitted = numba.njit(error_model="numpy")(compiled)
            jitted.compile(args)
            result = jitted.overloads[args].signature.return_type
            code = jitted.overloads[args].library.get_llvm_str()
    except Exception as e:  # numba's TypingError, UnsupportedError, LoweringError, ...
        if toolkit_missing(e):
            raise DeviceUnavailableError(f"numba-cuda cannot compile for the GPU here: {type(e).__name__}: {e} "
                                         f"(the CUDA toolkit's NVVM and libdevice come with {deps.CUDA_EXTRA})") from e
        if type(e).__module__.startswith(("numba", "numba_cuda")) or "numba" in type(e).__module__:
            raise friendly(f, e) from e
        raise
    return UDFTraits(result, "arrowdev_arena_state" in code, "arrowdev_row_failed" in code)


def _encode_traits(traits: UDFTraits) -> tuple | None:
    """Traits as plain values for the disk cache (the string types are classes made at run time, which
    pickle cannot name); None for a result type that is not kept."""
    from numba.core import types

    from .strings.numba_types import string_types

    result = traits.result
    optional = isinstance(result, types.Optional)
    base = result.type if optional else result
    if isinstance(base, string_types().stringlike):
        name = "string"
    elif isinstance(base, (types.Boolean, types.Integer, types.Float)):
        name = str(base)
    else:
        return None
    return ("traits-v1", name, optional, traits.allocates, traits.may_fail)


def _decode_traits(entry: Any) -> UDFTraits | None:
    if not (isinstance(entry, tuple) and len(entry) == 5 and entry[0] == "traits-v1"):
        return None
    from numba.core import types

    from .strings.numba_types import string_types

    _, name, optional, allocates, may_fail = entry
    base = string_types().managed_string if name == "string" else types.boolean if name == "bool" else \
        getattr(types, name)
    return UDFTraits(types.optional(base) if optional else base, allocates, may_fail)


def _compute_capability() -> tuple[int, int]:
    try:
        from ...gpu import runtime

        cp = runtime.cupy()
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return (props["major"], props["minor"])
    except Exception:
        return CI_COMPUTE_CAPABILITY
