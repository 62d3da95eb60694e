"""Errors of compiling a UDF: :class:`UDFCompileError` made short from numba's messages, the GPU's refusal of
``raise``, and telling a missing CUDA toolkit from a wrong UDF."""

from __future__ import annotations

import dis
import linecache
import os
import re
from typing import Callable

from ...errors import ArrowDevError
from .error_terms import construct_line, in_user_terms

__all__ = ["UDFCompileError", "describe", "friendly", "raises", "toolkit_missing"]


class UDFCompileError(ArrowDevError, TypeError):
    """A UDF numba cannot compile: names the UDF, the line and the construct."""


def describe(f: Callable) -> str:
    wrapped = getattr(f, "__arrowdev_wraps__", None)  # a builtin called through udf/run/callables.py's wrapper
    if wrapped is not None:
        return f"UDF {wrapped}"
    code = f.__code__
    return f"UDF {f.__qualname__!r} ({code.co_filename}:{code.co_firstlineno})"


_NUMBA_NOISE = re.compile(r"\x1b\[[0-9;]*m")


def friendly(f: Callable, error: Exception) -> UDFCompileError:
    """A short error from a numba failure: the UDF, the line numba points at, and the first line of
    the reason (numba's full message is kept as the cause)."""
    text = _NUMBA_NOISE.sub("", str(error))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    reason = next((ln for ln in lines if not ln.startswith(("Failed in", "During:", "File", ">>>", "-", "There are"))),
                  type(error).__name__)
    line = user_line(f, text, getattr(error, "loc", None))
    reason = in_user_terms(f, lines, line) or reason
    if getattr(f, "__arrowdev_wraps__", None) is not None:
        reason = reason.replace("Untyped global name 'f': ", "")  # the wrapper's name for it, not the user's
        return UDFCompileError(f"cannot compile {describe(f)}: numba cannot call it from compiled code ({reason}): "
                               "write the UDF as a Python function")
    if line is None:
        return UDFCompileError(f"cannot compile {describe(f)}: {reason}")
    source = linecache.getline(f.__code__.co_filename, line).strip()
    location = f"line {line}" + (f": `{source}`" if source else "")
    return UDFCompileError(f"cannot compile {describe(f)}: at {location}: {reason}")


def user_line(f: Callable, text: str, loc: object = None) -> int | None:
    """The line of the UDF's own file that numba's message points at last (numba's message may end in
    numba's own sources, a dict's ``d[k] = v``); else the location numba gives; else the UDF's first line."""
    own = os.path.normcase(os.path.abspath(f.__code__.co_filename))
    for filename, line in reversed(re.findall(r'File "([^"]+)", line (\d+)', text)):
        if os.path.normcase(os.path.abspath(filename)) == own or filename == f.__code__.co_filename:
            return int(line)
    if getattr(loc, "line", None) and getattr(loc, "filename", None) == f.__code__.co_filename:
        return int(loc.line)  # type: ignore[attr-defined]
    return construct_line(f, text) or f.__code__.co_firstlineno


def raises(f: Callable) -> bool:
    return any(ins.opname == "RAISE_VARARGS" for ins in dis.get_instructions(f))


def toolkit_missing(error: Exception) -> bool:
    """True for numba-cuda's errors that say a CUDA library was not found (NVVM, NVRTC, the driver;
    cuda.pathfinder's DynamicLibNotFoundError), not that the UDF is wrong."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"NvvmSupportError", "NvrtcSupportError", "CudaSupportError", "DynamicLibNotFoundError"})
