"""Export: held arrays -> PyCapsules, following the Arrow PyCapsule interface.

Every export is zero-copy (a new struct tree that shares the buffers and keeps the container
alive, see capsules/container.c), except where a method's docstring says it copies.
"""

from __future__ import annotations

from typing import Any

from .. import _capsules
from . import layout
from .types import DataType

HOST_LABELS = frozenset({3, 11})  # CUDA_HOST, ROCM_HOST: CPU memory, exported as CPU

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
    # representation changes honoured (C10): within a family of core/layout.py's table
    mine, theirs = layout.LAYOUTS.get(str(native.id)), layout.LAYOUTS.get(str(wanted.id))
    if mine is not None and theirs is not None and mine.family is not None and mine.family == theirs.family:
        if native.children and native.children[0] != wanted.children[0]:
            return None
        return wanted
    return None


def array_capsules(dtype: DataType, held: Any, device: bool) -> tuple[Any, Any]:
    """(schema, array) capsules for one held array ready to export (its null counts computed)."""
    pair = held.export_pair(device, -1, dtype)
    if pair is None:  # a bug in arrowdev, not in the data: ArrowColumn._ready_chunk comes first
        raise RuntimeError("arrowdev exported an array before computing its null counts")
    return pair


def stream_capsule(dtype: DataType, arrays: list[Any], device: bool, device_code: int = 1) -> Any:
    """A stream capsule yielding ``arrays`` (held arrays with known null counts)."""
    return _capsules.export_stream(dtype.__arrow_c_schema__(), arrays, device, device_code)


class StreamOnly:
    """A class attribute its instances do not have (``hasattr`` is False): the array protocols of
    a column or table of several chunks, which, like PyArrow's chunked arrays and tables, offer
    only the stream protocols, so that consumers take every chunk zero-copy."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        raise AttributeError(f"{self.name}: an arrowdev object of several chunks offers only the stream "
                             "protocols (__arrow_c_stream__, __arrow_c_device_stream__); combine_chunks() "
                             "makes one chunk (a copy)")


_IMPORTERS: list[Any] = []


def pyarrow_import_device_array() -> Any:
    """``pyarrow.Array._import_from_c_device_capsule``, looked up once (PyArrow is imported late)."""
    if not _IMPORTERS:
        import pyarrow as pa

        _IMPORTERS.append(pa.Array._import_from_c_device_capsule)
    return _IMPORTERS[0]


def cpu_labelled(dtype: DataType, held: Any) -> Any:
    """A held array of ``dtype`` ready to export, in CPU-readable memory whose producers are
    done, labelled ARROW_DEVICE_CPU: pinned host memory is CPU memory, and CPU-only consumers
    refuse the host labels. The same buffers; the new top node keeps ``held`` alive."""
    if held.device_type not in HOST_LABELS:
        return held
    node = layout.Node.of(held)
    nulls = node.null_count
    if nulls < 0:
        nulls = layout.null_count(dtype, node.offset, node.length, node.buffers[0] if node.buffers else 0,
                                  layout.read_cpu)
    return _capsules.build(dtype, node.length, nulls, node.offset, list(node.buffers),
                           [held.child(i) for i in range(len(node.children))], held.dictionary(), keepalive=held)
