"""The numba types of device strings: ``StringView`` (a row of a string column, read in place) and
``Utf8ConstantType`` (a string literal of the UDF, its bytes carried by the type).

numba's CPU target and numba-cuda's CUDA target share numba's type classes, so these exist once; the
data models, typing and lowering are registered with each target separately (see ``__init__``).
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=None)
def string_types() -> tuple[type, Any, type]:
    """(StringView class, its one instance ``string_view``, Utf8ConstantType class)."""
    from numba.core import types

    class StringView(types.Type):
        """UTF-8 bytes in memory someone else owns (a column's buffers): a pointer and a size."""

        def __init__(self) -> None:
            super().__init__(name="StringView")

    class Utf8ConstantType(types.Type):
        """A string literal; the type holds its UTF-8 bytes, so lowering emits them as constants."""

        def __init__(self, data: bytes) -> None:
            self.data = data
            super().__init__(name=f"Utf8Constant({data!r})")

    return StringView, StringView(), Utf8ConstantType
