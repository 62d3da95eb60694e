"""Errors of compiling a UDF: :class:`UDFCompileError` made short from numba's messages, the GPU's refusal of
``raise``, and telling a missing CUDA toolkit from a wrong UDF."""

from __future__ import annotations

import dis
import re
from typing import Callable

from ...errors import ArrowDevError

__all__ = ["UDFCompileError", "describe", "friendly", "raises", "toolkit_missing"]


class UDFCompileError(ArrowDevError, TypeError):
    """A UDF numba cannot compile: names the UDF, the line and the construct."""


def describe(f: Callable) -> str:
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
    where = re.findall(r'File "([^"]+)", line (\d+)', text)
    loc = getattr(error, "loc", None)
    if not where and getattr(loc, "line", None):
        where = [(loc.filename, str(loc.line))]
    source_line = ""
    if where:
        filename, line = where[-1]
        idx = next((i for i, ln in enumerate(lines) if ln.startswith(f'File "{filename}", line {line}')), None)
        if idx is not None and idx + 2 < len(lines):
            source_line = f": `{lines[idx + 2]}`"
        location = f"line {line}{source_line}"
    else:
        location = "its body"
    return UDFCompileError(f"cannot compile {describe(f)}: at {location}: {reason}")


def raises(f: Callable) -> bool:
    return any(ins.opname == "RAISE_VARARGS" for ins in dis.get_instructions(f))


def toolkit_missing(error: Exception) -> bool:
    """True for numba-cuda's errors that say a CUDA library was not found (NVVM, NVRTC, the driver;
    cuda.pathfinder's DynamicLibNotFoundError), not that the UDF is wrong."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"NvvmSupportError", "NvrtcSupportError", "CudaSupportError", "DynamicLibNotFoundError"})
