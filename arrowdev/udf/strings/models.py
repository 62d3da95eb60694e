"""Data models: a string view and a string literal are both ``{data: uint8*, size: int64}``, so every
string operation has one implementation for views and literals alike."""

from __future__ import annotations

from typing import Any

from .types import string_types


def register_models(target: Any) -> None:
    """Registers both types' struct model with one target's registry."""
    from numba.core import types

    StringView, _, Utf8ConstantType = string_types()

    class ViewModel(target.models.StructModel):
        def __init__(self, dmm: Any, fe_type: Any) -> None:
            super().__init__(dmm, fe_type, [("data", types.CPointer(types.uint8)), ("size", types.int64)])

    target.register_model(StringView)(ViewModel)
    target.register_model(Utf8ConstantType)(ViewModel)
