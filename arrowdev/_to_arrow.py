"""Export: held arrays -> PyCapsules, following the Arrow PyCapsule interface.

Every export is zero-copy (a new struct tree that shares the buffers and keeps the container
alive, see capsules/container.c), except where a method's docstring says it copies.
"""

from __future__ import annotations

from typing import Any

from . import _capsules
from .types import DataType

# Representation changes that ``requested_schema`` may ask for and arrowdev honours (C10).
_FAMILIES = (
    frozenset({"string", "large_string", "string_view"}),
    frozenset({"binary", "large_binary", "binary_view"}),
    frozenset({"list", "large_list"}),
)


def check_kwargs(kwargs: dict[str, Any]) -> None:
    """The protocols reserve keyword arguments for later versions: a non-None one we do not know
    must not be silently ignored."""
    unknown = sorted(k for k, v in kwargs.items() if v is not None)
    if unknown:
        raise NotImplementedError(f"unsupported keyword argument(s) {unknown}: arrowdev knows none yet")


def cheap_target(native: DataType, requested_schema: Any) -> DataType | None:
    """The requested type when it is a cheap representation change of ``native`` (string /
    large_string / string_view, binary likewise, list / large_list, dictionary -> values);
    None when the native type should be returned (equal, or a change we do not make)."""
    if requested_schema is None:
        return None
    wanted = DataType.from_arrow(requested_schema)
    if wanted == native:
        return None
    if native.value_type is not None and wanted == native.value_type:
        return wanted
    for family in _FAMILIES:
        if native.id in family and wanted.id in family:
            if native.children and native.children[0] != wanted.children[0]:
                return None
            return wanted
    return None


def array_capsules(dtype: DataType, held: Any, device: bool) -> tuple[Any, Any]:
    """(schema, array) capsules for one held array ready to export (its null counts computed)."""
    pair = held.export_pair(dtype._address, device)
    if pair is None:  # a bug in arrowdev, not in the data: ArrowColumn._ready_chunk comes first
        raise RuntimeError("arrowdev exported an array before computing its null counts")
    return pair


def stream_capsule(dtype: DataType, arrays: list[Any], device: bool, device_code: int = 1) -> Any:
    """A stream capsule yielding ``arrays`` (held arrays with known null counts)."""
    return _capsules.export_stream(dtype.__arrow_c_schema__(), arrays, device, device_code)
