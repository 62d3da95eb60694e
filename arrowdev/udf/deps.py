"""The compilers a UDF needs, found or named: numba for CPU columns (the ``udf`` extra), numba-cuda for GPU
columns (the ``cuda13`` extra); the hints say how to install each (:func:`arrowdev.errors.install_hint`).

>>> from arrowdev.udf import deps
>>> deps.require_compiler("cpu")
"""

from __future__ import annotations

import functools
import importlib

from ..errors import DeviceUnavailableError, MissingDependencyError, install_hint

__all__ = ["require_compiler", "CPU_EXTRA", "CUDA_EXTRA"]

CPU_EXTRA = install_hint("udf")
CUDA_EXTRA = install_hint("cuda13")


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
