"""The numba types of device strings.

- ``StringView``: a row of a string column, read in place (a pointer and a byte count).
- ``Utf8ConstantType``: a string literal of the UDF; the type carries its UTF-8 bytes.
- ``StringMemInfo``: the MemInfo pointer inside a ``ManagedString``, a ``MemInfoPointer`` of its own so the
  CUDA lowering can count it in line (``refcounts.py``).
- ``ManagedString``: a string a UDF made (``upper``, ``+``, a slice, ...): an NRT MemInfo pointer, a
  pointer and a byte count. The MemInfo makes numba's runtime (NRT) count references to it through the
  UDF; the bytes live in arrowdev's device arena (see ``docs/strings.md``). A slice of a string shares the
  string's MemInfo; a view or literal that flows into a ``ManagedString`` variable has none (NULL).

A view and a literal convert to ``ManagedString``, so ``s if c else s.upper()`` types as one string.
numba's CPU target and numba-cuda's CUDA target share numba's type classes, so these exist once; the
data models, typing and lowering are registered with each target separately (see ``__init__``).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace


@functools.lru_cache(maxsize=None)
def string_types() -> SimpleNamespace:
    """The classes ``StringView``, ``Utf8ConstantType``, ``ManagedString``, ``StringMemInfo``; the instances
    ``string_view``, ``managed_string``, ``string_meminfo``; and ``stringlike`` (the three string classes)."""
    from numba.core import types
    from numba.core.typeconv import Conversion

    class StringMemInfo(types.MemInfoPointer):
        """The MemInfo pointer inside a managed string (an NRT MemInfo, counted in line on the GPU)."""

        def __init__(self) -> None:
            self.dtype = types.voidptr
            types.Type.__init__(self, "StringMemInfo")

    class ManagedString(types.Type):
        """A new string: NRT MemInfo (NULL for borrowed bytes), data pointer and byte count."""

        def __init__(self) -> None:
            super().__init__(name="ManagedString")

    managed_string = ManagedString()

    class _ConvertsToManaged(types.Type):
        def can_convert_to(self, typingctx, other):
            return Conversion.safe if isinstance(other, ManagedString) else None

        def unify(self, typingctx, other):
            if isinstance(other, (ManagedString, StringView, Utf8ConstantType)) and other != self:
                return managed_string
            return None

    class StringView(_ConvertsToManaged):
        """UTF-8 bytes in memory someone else owns (a column's buffers): a pointer and a size."""

        def __init__(self) -> None:
            super().__init__(name="StringView")

    class Utf8ConstantType(_ConvertsToManaged):
        """A string literal; the type holds its UTF-8 bytes, so lowering emits them as constants."""

        def __init__(self, data: bytes) -> None:
            self.data = data
            super().__init__(name=f"Utf8Constant({data!r})")

    return SimpleNamespace(StringView=StringView, string_view=StringView(), Utf8ConstantType=Utf8ConstantType,
                           ManagedString=ManagedString, managed_string=managed_string,
                           StringMemInfo=StringMemInfo, string_meminfo=StringMemInfo(),
                           stringlike=(StringView, Utf8ConstantType, ManagedString))
