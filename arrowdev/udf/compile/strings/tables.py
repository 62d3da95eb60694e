"""The Unicode tables (and the powers of ten of ``float(s)``) as compiled code reads them: ``table[i]`` and ``len(table)`` on a ``Table``.

numba would freeze a NumPy array global into the kernel's constant memory, which holds 64 KiB on CUDA; the
case mappings alone are three times that. A ``Table`` is lowered instead to a module global of int32 in
ordinary global memory (``__device__`` on CUDA, linkonce_odr so every module of a kernel shares one copy).
"""

from __future__ import annotations

import functools
from typing import Any


class Table:
    """A named tuple of values for compiled string code: int32 (code points, ranges, mapping rows) or,
    with ``floats=True``, float64."""

    def __init__(self, name: str, values: tuple, floats: bool = False) -> None:
        self.name, self.values, self.floats = name, tuple(values), floats

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> int:
        return self.values[index]


@functools.lru_cache(maxsize=None)
def table_type() -> type:
    from numba.core import types

    class TableType(types.Type):
        def __init__(self, name: str, size: int, floats: bool) -> None:
            self.table_name, self.size, self.floats = name, size, floats
            super().__init__(name=f"Table({name}, {size}, {'f64' if floats else 'i32'})")

    return TableType


_tables: dict[str, Table] = {}


def register_tables(target: Any) -> None:
    """typeof, constant, ``len`` and ``getitem`` of tables for one target."""
    import operator

    from llvmlite import ir
    from numba.core import types

    TableType = table_type()
    cuda = target.name == "cuda"
    i32 = ir.IntType(32)

    @target.typeof_impl.register(Table)
    def _typeof(value, context):
        _tables[value.name] = value
        return TableType(value.name, len(value), value.floats)

    target.register_model(TableType)(target.models.OpaqueModel)

    @target.lower_constant(TableType)
    def _constant(context, builder, ty, value):
        return context.get_dummy_value()

    @target.type_callable(len)
    def _type_len(context):
        def typer(table):
            return types.int64 if isinstance(table, TableType) else None
        return typer

    @target.lower_builtin(len, TableType)
    def _len(context, builder, sig, args):
        return context.get_constant(types.int64, sig.args[0].size)

    @target.type_callable(operator.getitem)
    def _type_getitem(context):
        def typer(table, index):
            if isinstance(table, TableType) and isinstance(index, types.Integer):
                return types.float64 if table.floats else types.int64
            return None
        return typer

    @target.lower_builtin(operator.getitem, TableType, types.Integer)
    def _getitem(context, builder, sig, args):
        ty = sig.args[0]
        element = ir.DoubleType() if ty.floats else i32
        array_type = ir.ArrayType(element, max(ty.size, 1))
        name = f"arrowdev_table_{ty.table_name}"
        try:
            gv = builder.module.get_global(name)
        except KeyError:
            gv = ir.GlobalVariable(builder.module, array_type, name, addrspace=1 if cuda else 0)
            gv.linkage = "linkonce_odr"
            gv.global_constant = True
            gv.initializer = ir.Constant(array_type, list(_tables[ty.table_name].values) or [0])
        index = context.cast(builder, args[1], sig.args[1], types.int64)
        value = builder.load(builder.gep(gv, [ir.Constant(ir.IntType(64), 0), index]))
        if cuda:  # never written: NVVM reads it through the read-only (non-coherent) cache, ld.global.nc
            value.set_metadata("invariant.load", builder.module.add_metadata([]))
        return value if ty.floats else builder.sext(value, ir.IntType(64))
