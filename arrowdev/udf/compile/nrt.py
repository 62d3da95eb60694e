"""numba-cuda's runtime (NRT) switched on for the kernels that make managed strings, while they compile and
link, and left as the user set it otherwise."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["NRT_KERNELS", "cuda_nrt"]

_nrt_lock = threading.RLock()
NRT_KERNELS: set[Any] = set()  # CUDA kernels compiled with numba-cuda's runtime on


@contextlib.contextmanager
def cuda_nrt() -> Iterator[None]:
    """numba-cuda's runtime switched on while a kernel that makes managed strings compiles and links."""
    from numba.cuda import config

    with _nrt_lock:
        before = getattr(config, "CUDA_ENABLE_NRT", False)
        config.CUDA_ENABLE_NRT = True
        try:
            yield
        finally:
            config.CUDA_ENABLE_NRT = before
