"""String literals in UDFs, as numba typing sees them.

numba types a string constant as its own unicode type, which the CUDA target cannot lower. Before a UDF is
compiled, arrowdev replaces each string constant of its code, and each string its closure captures, with a
:class:`Utf8Constant`, which types as
``Utf8ConstantType`` carrying the UTF-8 bytes; lowering turns it into a constant byte array with a view's
layout. The function's meaning in plain Python is unchanged (``Utf8Constant`` compares like its text).
"""

from __future__ import annotations

import types as pytypes
from typing import Callable

__all__ = ["Utf8Constant", "to_str", "with_string_constants"]


class Utf8Constant(str):
    """A UDF's string literal (a ``str``, so plain Python still works); numba sees its UTF-8 bytes."""

    @property
    def data(self) -> bytes:
        return self.encode("utf-8")


def to_str(value):  # noqa: D103 - stands for ``str`` in UDFs; numba calls its registered lowering
    return str(value)


def _wrap(value: object) -> object:
    return Utf8Constant(value) if isinstance(value, str) and not isinstance(value, Utf8Constant) else value


def with_string_constants(f: Callable) -> Callable:
    """``f`` with its string constants (docstring aside) and string closure values replaced by
    :class:`Utf8Constant`, and the builtin ``str`` by :func:`to_str` (numba's CPU target types ``str(n)``
    as its own unicode type, which a kernel cannot return)."""
    code = f.__code__
    docstring = 0 if f.__doc__ is not None and code.co_consts and code.co_consts[0] == f.__doc__ else -1
    consts = tuple(c if i == docstring else _wrap(c) for i, c in enumerate(code.co_consts))
    cells = f.__closure__ or ()
    contents = [cell.cell_contents for cell in cells]
    wrapped = [_wrap(value) for value in contents]
    uses_str = "str" in code.co_names and "str" not in f.__globals__
    if (all(a is b for a, b in zip(consts, code.co_consts)) and all(a is b for a, b in zip(wrapped, contents))
            and not uses_str):
        return f
    closure = tuple(pytypes.CellType(value) for value in wrapped) if cells else None
    namespace = {**f.__globals__, "str": to_str} if uses_str else f.__globals__
    rewritten = pytypes.FunctionType(code.replace(co_consts=consts), namespace, f.__name__, f.__defaults__,
                                     closure)
    rewritten.__qualname__, rewritten.__doc__ = f.__qualname__, f.__doc__
    return rewritten
