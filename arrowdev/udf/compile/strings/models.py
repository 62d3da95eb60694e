"""Data models: a string view and a string literal are ``{data: uint8*, size: int64}``; a managed string
is ``{meminfo, data, size}``, its MemInfo pointer being what numba's runtime increfs and decrefs. Field
names are shared, so every string operation has one implementation for all three."""

from __future__ import annotations

from typing import Any

from .numba_types import string_types


def register_models(target: Any) -> None:
    """Registers the three struct models, and the MemInfo pointer model, with one target's registry."""
    from numba.core import types

    t = string_types()
    # CPU: the arena owns every string's bytes until the host is done with the launch, and a CPU kernel runs in
    # one thread: counting references would only cost two NRT calls (atomics) per string, so the MemInfo slot is
    # an opaque pointer there (the block's address), which numba's runtime does not count (managed.py)
    meminfo_model = target.models.MemInfoModel if target.name == "cuda" else target.models.OpaqueModel
    target.register_model(t.StringMemInfo)(meminfo_model)
    bytes_fields = [("data", types.CPointer(types.uint8)), ("size", types.int64)]

    class ViewModel(target.models.StructModel):
        def __init__(self, dmm: Any, fe_type: Any) -> None:
            super().__init__(dmm, fe_type, bytes_fields)

    class ManagedModel(target.models.StructModel):
        def __init__(self, dmm: Any, fe_type: Any) -> None:
            super().__init__(dmm, fe_type, [("meminfo", t.string_meminfo), *bytes_fields])

    target.register_model(t.StringView)(ViewModel)
    target.register_model(t.Utf8ConstantType)(ViewModel)
    target.register_model(t.ManagedString)(ManagedModel)
