"""The compilers a UDF needs, found or named: numba for CPU columns (``pip install "arrowdev[udf]"``),
numba-cuda for GPU columns (``pip install "arrowdev[cuda13]"``).

>>> from arrowdev.udf import deps
>>> deps.require_compiler("cpu")
"""

from __future__ import annotations

import functools
import importlib

from ..errors import DeviceUnavailableError, MissingDependencyError

__all__ = ["require_compiler", "CPU_EXTRA", "CUDA_EXTRA"]

CPU_EXTRA = 'pip install "arrowdev[udf]"'
CUDA_EXTRA = 'pip install "arrowdev[cuda13]"'


@functools.lru_cache(maxsize=None)
def _importable(module: str) -> str | None:
    """None when ``module`` imports; else why it does not."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        return str(e) or type(e).__name__
    return None


def require_compiler(target: str) -> None:
    """Returns when the compiler for ``target`` ('cpu' or 'cuda') imports; otherwise raises
    :class:`~arrowdev.MissingDependencyError` (CPU: numba) or :class:`~arrowdev.DeviceUnavailableError`
    (CUDA: numba-cuda, which provides ``numba.cuda``'s extension API), naming the extra to install."""
    problem = _importable("numba")
    if problem is not None:
        extra = CPU_EXTRA if target == "cpu" else CUDA_EXTRA
        error = MissingDependencyError if target == "cpu" else DeviceUnavailableError
        raise error(f"UDFs need numba, which does not import here ({problem}): {extra}")
    if target == "cuda":
        problem = _importable("numba_cuda") or _importable("numba.cuda.extending")
        if problem is not None:
            raise DeviceUnavailableError(f"UDFs on GPU columns need numba-cuda, which does not import here "
                                         f"({problem}): {CUDA_EXTRA}")
