"""What a UDF returns, checked against what the call can make of it, before a kernel is generated: each
refusal names the UDF, the ``return`` line, and the argument to change.

- ``None`` / ``ad.NA`` for some rows needs ``null_aware=True`` (only then does the kernel write validity
  row by row);
- a dict, list, tuple or array is not one value per row;
- ``out_type`` must be a type the kernel writes for what the UDF returns (numbers and bools into numeric,
  bool and temporal types; strings into string types).
"""

from __future__ import annotations

import dis
import linecache
from typing import Any, Callable

from .compile_errors import UDFCompileError, describe
from ..spec import NullMode

__all__ = ["check_result", "return_line"]


def return_line(f: Callable, prefer: tuple[str, ...] = ()) -> str:
    """' at line N: `source`' for the UDF's ``return`` (the first whose source names one of ``prefer``,
    else the first); '' where the source cannot be read."""
    if getattr(f, "__arrowdev_wraps__", None) is not None:
        return ""
    code = f.__code__
    lines = sorted({ins.positions.lineno for ins in dis.get_instructions(f)
                    if ins.opname.startswith("RETURN") and ins.positions is not None and ins.positions.lineno})
    sources = [(n, linecache.getline(code.co_filename, n).strip()) for n in lines]
    sources = [(n, text) for n, text in sources if text]
    if not sources:
        return ""
    n, text = next(((n, t) for n, t in sources if any(p in t for p in prefer)), sources[0])
    return f" at line {n}: `{text}`"


def check_result(f: Callable, result: Any, mode: NullMode, out_type: Any) -> None:
    """Raises when the UDF's result type ``result`` (numba's) cannot become this call's output (see the
    module docstring); returns otherwise."""
    from numba.core import types

    from .strings.numba_types import string_types

    optional = isinstance(result, types.Optional) or result == types.none
    if optional and mode != NullMode.AWARE:
        raise UDFCompileError(f"{describe(f)} returns None or ad.NA for some rows{return_line(f, ('None', 'NA'))}: "
                              "pass null_aware=True to make those rows null (the UDF then also sees ad.NA "
                              "for null inputs: test `x is ad.NA` first)")
    base = result.type if isinstance(result, types.Optional) else result
    if isinstance(base, string_types().stringlike):
        return
    if not isinstance(base, (types.Boolean, types.Integer, types.Float, types.NoneType)):
        what = {types.DictType: "a dict", types.List: "a list", types.BaseTuple: "a tuple",
                types.Array: "an array"}
        name = next((v for k, v in what.items() if isinstance(base, k)), str(base))
        raise UDFCompileError(f"{describe(f)} returns {name}{return_line(f)}; a UDF returns one value per row: "
                              "a number, a bool, a string or ad.NA (make one column per value)")
    if out_type is not None:
        from .arrow_types import UnsupportedTypeError, element_dtype

        try:
            element_dtype(out_type)
        except UnsupportedTypeError:
            raise UnsupportedTypeError(
                f"out_type={out_type} does not fit what {describe(f)} returns ({base}): for a UDF that returns "
                "numbers or bools, pass a numeric, bool or temporal out_type, or leave it out") from None
