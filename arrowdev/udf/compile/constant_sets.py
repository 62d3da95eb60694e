"""``x in (constants)`` in UDFs, compiled as one comparison per constant, unrolled.

CPython folds ``x in [1027, 1000, 59, 980]`` (a list or tuple of number literals) into a constant tuple
followed by ``CONTAINS_OP``. numba lowers membership in a tuple as a loop over the tuple held in local
memory, which on a GPU ran 6x slower than ``cupy.isin`` (docs/udf.md). Before compiling a UDF, arrowdev
replaces each such constant with a :class:`ConstantSet`, whose numba type carries the values, and whose
``in`` lowers to ``x == c1 or x == c2 or ...`` with no memory traffic.

Typing, data model and lowering are registered with numba's CPU target and numba-cuda's CUDA target
alike (each target has its own registries); the lowering emits IR directly, so ``compile_ptx`` checks it
without a GPU.
"""

from __future__ import annotations

import dis
import operator
import types as pytypes
from typing import Any, Callable

__all__ = ["ConstantSet", "with_constant_sets"]


class ConstantSet:
    """Number literals a UDF tests membership in."""

    __slots__ = ("values",)

    def __init__(self, values: tuple) -> None:
        self.values = values

    def __contains__(self, item: object) -> bool:  # the same meaning in plain Python
        return item in self.values

    def __repr__(self) -> str:
        return f"ConstantSet{self.values!r}"


def _is_number_tuple(value: object) -> bool:
    return (isinstance(value, tuple) and len(value) > 0
            and all(isinstance(v, (int, float)) for v in value))


def with_constant_sets(f: Callable, target: str = "cpu") -> Callable:
    """``f`` with every constant number tuple that is tested with ``in`` / ``not in`` replaced by a
    :class:`ConstantSet` (``f`` itself unchanged when it has none), registered with ``target``."""
    code = f.__code__
    instructions = list(dis.get_instructions(code))
    targets = {ins.arg for ins, nxt in zip(instructions, instructions[1:])
               if ins.opname == "LOAD_CONST" and nxt.opname == "CONTAINS_OP" and _is_number_tuple(ins.argval)}
    if not targets:
        return f
    _register_numba(target)
    consts = tuple(ConstantSet(c) if i in targets else c for i, c in enumerate(code.co_consts))
    rewritten = pytypes.FunctionType(code.replace(co_consts=consts), f.__globals__, f.__name__, f.__defaults__,
                                     f.__closure__)
    rewritten.__qualname__ = f.__qualname__
    return rewritten


_registered: set[str] = set()


def _register_numba(target: str) -> None:
    """Registers the type with numba's CPU target or numba-cuda's CUDA target (once each; the CUDA one
    only when a GPU UDF asks, so CPU UDFs never import numba-cuda), in registries of its own
    (:mod:`.targets`), never numba's global ones."""
    if target in _registered:
        return
    from .targets import cpu_target, cuda_target

    extension = cuda_target() if target == "cuda" else cpu_target()
    if extension is None:
        from ...errors import DeviceUnavailableError, install_hint

        raise DeviceUnavailableError(f"GPU UDFs need numba-cuda: {install_hint('cuda13')}")
    _register(extension)
    extension.install()
    _registered.add(target)


def _register(target: Any) -> None:
    from numba.core import types

    class ConstantSetType(types.Type):
        def __init__(self, values: tuple) -> None:
            self.values = values
            super().__init__(name=f"ConstantSet{values}")

    @target.typeof_impl.register(ConstantSet)
    def _typeof(value, context):
        return ConstantSetType(value.values)

    target.register_model(ConstantSetType)(target.models.OpaqueModel)

    @target.lower_constant(ConstantSetType)
    def _constant(context, builder, ty, value):
        return context.get_dummy_value()

    @target.type_callable(operator.contains)
    def _type_contains(context):
        def typer(container, item):
            if isinstance(container, ConstantSetType) and isinstance(item, (types.Number, types.Boolean)):
                return types.boolean
        return typer

    @target.lower_builtin(operator.contains, ConstantSetType, types.Number)
    @target.lower_builtin(operator.contains, ConstantSetType, types.Boolean)
    def _lower_contains(context, builder, sig, args):
        container, item_type = sig.args
        item = args[1]
        found = context.get_constant(types.boolean, False)
        for value in container.values:
            const_type = types.float64 if isinstance(value, float) else types.int64
            constant = context.get_constant(const_type, value)
            equal = context.generic_compare(builder, operator.eq, (item_type, const_type), (item, constant))
            found = builder.or_(found, equal)
        return found
