"""``load_streaming(array, i)``: element ``i`` of a 1-D device array, read with ``ld.global.cs``.

The streaming cache hint (evict first) suits data a kernel reads once. numba-cuda's ``cuda.ldcs``
issues the same instruction but also wraps negative indices, three more 64-bit integer operations
per load; in a ballot kernel over int64 those compete with the UDF's own 64-bit compares for the
integer pipe. arrowdev's kernels never pass a negative index (codegen.py clamps rows to the column).

CUDA target only: the intrinsic is typed for 1-D arrays of 16-, 32- and 64-bit numbers and lowered
to inline PTX, so ``compile_ptx`` checks it without a GPU.
"""

from __future__ import annotations

from typing import Any

_REGISTER = {16: "h", 32: "r", 64: "l"}  # PTX inline-asm register class per width


def load_streaming(array: Any, index: int) -> Any:
    """Stub: ``array[index]``; the CUDA lowering is registered by :func:`cuda_intrinsic`."""
    return array[index]


_intrinsic: Any = None


def cuda_intrinsic() -> Any:
    """The CUDA intrinsic for :func:`load_streaming` (made once)."""
    global _intrinsic
    if _intrinsic is None:
        _intrinsic = _make()
    return _intrinsic


def _make() -> Any:
    from llvmlite import ir
    from numba.core import types
    from .targets import cuda_target

    target = cuda_target()  # registries of its own, never numba-cuda's global ones

    @target.intrinsic
    def load_streaming(typingctx, array, index):
        if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)
                and isinstance(array.dtype, (types.Integer, types.Float)) and array.dtype.bitwidth in _REGISTER):
            return None

        def codegen(context, builder, sig, args):
            array_type, index_type = sig.args
            data = context.make_array(array_type)(context, builder, args[0]).data
            position = context.cast(builder, args[1], index_type, types.intp)
            address = builder.gep(data, [position], inbounds=True)
            width = array_type.dtype.bitwidth
            bits = ir.IntType(width)
            load = ir.InlineAsm(ir.FunctionType(bits, [address.type]), f"ld.global.cs.b{width} $0, [$1];",
                                f"={_REGISTER[width]},l")
            value = builder.call(load, [address])
            return builder.bitcast(value, context.get_value_type(array_type.dtype))

        return array.dtype(array, index), codegen

    target.install()
    return load_streaming
