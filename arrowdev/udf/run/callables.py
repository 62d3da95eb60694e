"""What ``apply`` takes as a UDF: a Python function as it is, and any other callable numba can call from
compiled code (``math.sqrt``, ``abs``, ``np.sqrt``, a ``numba.njit`` function) inside a small Python
function that calls it, so ``col.apply(math.sqrt)`` works as ``col.apply(lambda x: math.sqrt(x))`` does.
A callable numba cannot call (a class instance with ``__call__``, a C function numba does not know) is
refused at compile time with its name (:func:`arrowdev.udf.compile_errors.describe`).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

__all__ = ["as_udf"]


def _name(f: Any) -> str:
    module = getattr(f, "__module__", None) or type(f).__module__
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__qualname__
    return f"{module}.{name}" if module not in (None, "builtins") else name


@functools.lru_cache(maxsize=None)
def _maker(arity: int) -> Callable[[Any], Callable]:
    """A function that makes the wrapper of a callable: one code object per arity, so wrappers of one
    callable share their cache keys (code and closure value, spec.function_key) across calls."""
    params = ", ".join(f"x{k}" for k in range(arity))
    namespace: dict[str, Any] = {}
    exec(f"def _outer(f):\n    def call({params}):\n        return f({params})\n    return call\n", namespace)
    maker: Callable[[Any], Callable] = namespace["_outer"]
    return maker


def as_udf(f: Any, arity: int) -> Callable:
    """``f`` as a UDF of ``arity`` arguments: a Python function itself, any other callable called from a
    wrapper; TypeError for what is not callable."""
    if isinstance(f, types.FunctionType):
        return f
    if not callable(f):
        raise TypeError(f"expected a function, got {type(f).__name__}")
    wrapper = _maker(arity)(f)
    wrapper.__qualname__ = wrapper.__name__ = f"<{_name(f)}>"
    wrapper.__arrowdev_wraps__ = (  # type: ignore[attr-defined]
        f"{_name(f)!r} (a callable that is not a Python function, called from a Python function arrowdev wrote)")
    return wrapper
