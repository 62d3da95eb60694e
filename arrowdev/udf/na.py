"""``ad.NA``: the missing value as null-aware UDFs see it.

In a UDF compiled with ``null_aware=True``, an argument is ``ad.NA`` where the row is null, and
returning ``ad.NA`` makes the output row null. To numba, ``NA`` is ``None``: a nullable argument
has type ``Optional[T]``, so ``x is ad.NA`` narrows it exactly as ``x is None`` does, on the CPU
and CUDA targets alike (the typing is registered with both registries, numba's and numba-cuda's).

>>> import arrowdev as ad
>>> ad.NA
NA
>>> ad.NA is ad.NA, bool(ad.NA)
(True, False)
"""

from __future__ import annotations

__all__ = ["NA", "NAType"]


class NAType:
    """The type of :data:`NA`, a singleton."""

    _instance: NAType | None = None

    def __new__(cls) -> NAType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NA"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NA"


NA = NAType()
_registered: set[str] = set()


def register_numba_typing(target: str = "cpu") -> None:
    """Teaches numba (``target`` 'cpu') or numba-cuda ('cuda') that NA has type ``none``; called before
    compiling, for the target compiled for (CPU UDFs never import numba-cuda)."""
    if target in _registered:
        return
    if target == "cuda":
        from numba.cuda import types as cuda_types
        from numba.cuda.extending import typeof_impl as cuda_typeof_impl

        cuda_typeof_impl.register(NAType)(lambda value, context: cuda_types.none)
    else:
        from numba.core import types as cpu_types
        from numba.extending import typeof_impl

        typeof_impl.register(NAType)(lambda value, context: cpu_types.none)
    _registered.add(target)
