"""PyArrow adapter: conversions, casts and concatenation done by PyArrow on CPU data.

Adapters translate; they own nothing. Everything here goes through the PyCapsule protocols, so
the PyArrow objects share arrowdev's buffers and keep its containers alive. Functions take a column
(its public API and :mod:`arrowdev.core.chunks`); those that make new data return held arrays, which
column.py wraps.

PyArrow has no type for two Arrow formats, ``tiM`` (interval[months]) and ``tiD``
(interval[day_time]). Their layouts are those of ``int32`` and ``fixed_size_binary(8)``, so PyArrow
handles such data under a *stand-in* type with the same buffers (concatenation, empty arrays,
values), and arrowdev puts the real type back.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..core import chunks as _chunked
from ..core.from_arrow import read_arrow
from ..core.layout import LAYOUTS
from ..core.types import DataType

if TYPE_CHECKING:
    from ..core.chunks import ColumnCore as ArrowColumn  # an ArrowColumn: its public API and its core

# formats PyArrow cannot import -> one of the same buffers that it can (core/layout.py's table says which)
_STAND_INS = dict(layout.pyarrow_stand_in for layout in LAYOUTS.values() if layout.pyarrow_stand_in)


def needs_stand_in(dtype: DataType) -> bool:
    """True when ``dtype`` holds a type PyArrow cannot import (anywhere in its tree)."""
    return _needs(dtype.c_schema)


def _needs(c: Any) -> bool:
    return (c.format in _STAND_INS or any(_needs(child) for child in c.children)
            or (c.dictionary is not None and _needs(c.dictionary)))


def stand_in(dtype: DataType) -> DataType:
    """``dtype`` with every type PyArrow cannot import replaced by one of the same layout."""
    return DataType(_stand_in(dtype.c_schema)) if needs_stand_in(dtype) else dtype


def _stand_in(c: Any) -> Any:
    dictionary = None if c.dictionary is None else _stand_in(c.dictionary)
    return c.modify(format=_STAND_INS.get(c.format, c.format), children=[_stand_in(x) for x in c.children],
                    dictionary=dictionary)


# string, binary and list layouts -> the large one: the type their values are compared as (Polars makes
# every string a string_view and every list a large_list; ``==`` compares values across these layouts, the
# representation changes a requested schema may ask for, as it does across chunkings)
_WIDE = {"u": "U", "vu": "U", "z": "Z", "vz": "Z", "+l": "+L"}


def layout_free(dtype: DataType) -> DataType:
    """``dtype`` with every string, binary and list layout (anywhere in its tree) made the large one."""
    return DataType(_widened(dtype.c_schema))


def _widened(c: Any) -> Any:
    dictionary = None if c.dictionary is None else _widened(c.dictionary)
    return c.modify(format=_WIDE.get(c.format, c.format), children=[_widened(x) for x in c.children],
                    dictionary=dictionary)


def equal_across_layouts(a: ArrowColumn, b: ArrowColumn) -> bool:
    """True when columns of types that differ only in string / binary / list layouts hold the same values
    (both cast to the large layouts by PyArrow, a copy); False when the types differ otherwise."""
    wide = layout_free(a.type)
    if wide != layout_free(b.type):
        return False
    left, right = (to_chunked_array(c) for c in (a, b))
    target = wide.to_pyarrow()
    return bool(left.cast(target).equals(right.cast(target)))


def to_chunked_array(col: ArrowColumn) -> pa.ChunkedArray:
    """The column as a ``pyarrow.ChunkedArray`` (zero-copy for CPU data)."""
    if needs_stand_in(col.type):  # PyArrow would raise a bare KeyError
        raise NotImplementedError(f"PyArrow has no arrays of {col.type} (it knows the type, not its arrays): "
                                  "to_pylist(), col[i], ==, combine_chunks() and the protocols work")
    return pa.chunked_array(col)


def to_storage_chunked_array(col: ArrowColumn) -> pa.ChunkedArray:
    """The column as a ``pyarrow.ChunkedArray`` of its stand-in type (zero-copy for CPU data):
    the column's own type where PyArrow knows it."""
    from ..core.to_arrow import stream_capsule

    dtype = stand_in(col.type)
    if dtype is col.type:
        return to_chunked_array(col)
    host = col.to_host()  # the column itself where the CPU reads it
    _chunked.wait_for_producers(host)
    ready = _chunked.exportable_chunks(host)
    return pa.ChunkedArray._import_from_c_capsule(stream_capsule(dtype, ready, device=False))


def _held(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The held arrays over the buffers of a PyArrow array (zero-copy)."""
    return read_arrow(arr)[1]


def empty_chunks(dtype: DataType) -> list[Any]:
    """One empty held array of ``dtype`` (``pa.nulls(0)`` builds one for every type)."""
    return _held(pa.nulls(0, stand_in(dtype).to_pyarrow()))


def cast(col: ArrowColumn, target: DataType) -> tuple[DataType, list[Any]]:
    """The column cast to ``target`` by PyArrow (a copy of what the cast rewrites): its type (the
    column's field name and nullability) and chunks."""
    target_type = target.to_pyarrow()
    cast_chunks = [chunk.cast(target_type) for chunk in to_chunked_array(col).chunks]
    field = pa.field(col.name or "", target_type, nullable=col.type.nullable)
    return DataType.from_arrow(field), _held(pa.chunked_array(cast_chunks, type=target_type))


def take(col: ArrowColumn, indices: np.ndarray) -> tuple[DataType, list[Any]]:
    """Rows ``indices`` (int64, in range) of a CPU column, taken by PyArrow (a copy): its type and
    chunks (one)."""
    chunked, where = to_storage_chunked_array(col), pa.array(indices, pa.int64())
    try:
        taken = chunked.take(where)
    except pa.ArrowNotImplementedError:  # PyArrow 26 has no take of views or run-end encoded arrays
        taken = _take_through(chunked, where)
    return col.type, _held(taken.combine_chunks())


def _take_through(chunked: pa.ChunkedArray, where: pa.Array) -> pa.ChunkedArray:
    """A take through a type PyArrow can take: run-end encoded data decoded and encoded again, views
    through the large layouts (:func:`layout_free`), cast back."""
    import pyarrow.compute as pc

    native = chunked.type
    if pa.types.is_run_end_encoded(native):
        decoded = pc.run_end_decode(chunked)
        return pc.run_end_encode(_take_through(decoded, where) if _needs_wide(decoded.type) else decoded.take(where),
                                 run_end_type=native.run_end_type)
    wide = layout_free(DataType.from_arrow(native)).to_pyarrow()
    return chunked.cast(wide).take(where).cast(native)


def _needs_wide(native: pa.DataType) -> bool:
    return layout_free(DataType.from_arrow(native)) != DataType.from_arrow(native)


def concatenate(col: ArrowColumn) -> Any:
    """The column as one held array in CPU memory: PyArrow concatenates the chunks (a copy)."""
    # Empty chunks are left out: PyArrow loses the buffers of an empty chunk with an offset after
    # its own C import, and they add nothing.
    chunks = [c for c in to_storage_chunked_array(col).chunks if len(c)]
    if not chunks:
        return empty_chunks(col.type)[0]
    return _held(pa.concat_arrays(chunks))[0]


# ---- values --------------------------------------------------------------------------------------


def to_pylist(col: ArrowColumn) -> list[Any]:
    """The values as Python objects, PyArrow's conversion; interval[months] values are ints and
    interval[day_time] values ``(days, milliseconds)`` tuples (as nanoarrow gives them)."""
    chunked = to_storage_chunked_array(col)
    if not needs_stand_in(col.type):
        return chunked.to_pylist()
    return [_value(col.type, scalar) for chunk in chunked.chunks for scalar in chunk]


def _value(dtype: DataType, scalar: pa.Scalar) -> Any:
    """The Python value of a stand-in scalar of ``dtype``."""
    if not scalar.is_valid:
        return None
    if not needs_stand_in(dtype):
        return scalar.as_py()
    fmt, storage = dtype.format, dtype.storage_id
    if fmt == "tiM":
        return scalar.as_py()
    if fmt == "tiD":
        raw = scalar.as_py()
        return int.from_bytes(raw[:4], "little", signed=True), int.from_bytes(raw[4:], "little", signed=True)
    if storage == "struct":
        return {child.name: _value(child, scalar[i]) for i, child in enumerate(dtype.children)}
    if storage == "map":
        key_type, item_type = dtype.children[0].children
        return [(_value(key_type, e["key"]), _value(item_type, e["value"])) for e in scalar.values]
    if dtype.value_type is not None:  # a dictionary
        return _value(dtype.value_type, scalar.value)
    if storage == "run_end_encoded":
        return _value(dtype.children[1], scalar.value)
    if storage in ("sparse_union", "dense_union"):
        codes = scalar.type.type_codes
        return _value(dtype.children[codes.index(scalar.type_code)], scalar.value)
    return [_value(dtype.children[0], item) for item in scalar.values]  # the list types


# ---- pyarrow.array(col) and NumPy ----------------------------------------------------------------


@cache
def pyarrow_has_cuda() -> bool:
    """True for a PyArrow built with CUDA (conda's pyarrow-cuda), which imports CUDA arrays."""
    try:
        import pyarrow.cuda  # noqa: F401
    except ImportError:
        return False
    return True


def to_array(col: ArrowColumn, type: Any = None) -> pa.Array | pa.ChunkedArray:
    """What ``pyarrow.array(col)`` returns (the ``__arrow_array__`` protocol): an Array for a
    column of at most one chunk, a ChunkedArray (zero-copy) for several. CPU data: zero-copy;
    device data: a host copy, unless this PyArrow can import the device (CUDA builds)."""
    if col.num_chunks > 1:
        return pa.chunked_array(col)
    device = col.device
    if col.num_chunks == 0:
        out = pa.nulls(0, col.type.to_pyarrow())
    elif device.is_cpu_readable or (device.type == "cuda" and pyarrow_has_cuda()):
        out = pa.Array._import_from_c_device_capsule(*col.__arrow_c_device_array__())
    else:
        out = pa.Array._import_from_c_capsule(*col.__arrow_c_array__())
    return out if type is None or out.type == type else out.cast(type)


def _view(col: ArrowColumn) -> np.ndarray | None:
    """A NumPy view of the column's one CPU chunk, where PyArrow's ``to_numpy(zero_copy_only=True)``
    makes one (fixed-width data without nulls), else None."""
    if col.num_chunks != 1 or not col.device.is_cpu_readable:
        return None
    try:
        return to_array(col).to_numpy(zero_copy_only=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
        return None


def _why_copy(col: ArrowColumn) -> str:
    if col.num_chunks != 1:
        return f"{col.num_chunks} chunks"
    if not col.device.is_cpu_readable:
        return f"data on {col.device.type}"
    if col.null_count:
        return f"{col.null_count} nulls"
    return f"type {col.type}"


def to_numpy(col: ArrowColumn, zero_copy_only: bool = True, writable: bool = False) -> np.ndarray:
    """PyArrow's ``Array.to_numpy`` rules on the whole column (see ArrowColumn.to_numpy)."""
    view = _view(col)
    if view is not None and not writable:
        return view
    if zero_copy_only:
        why = "writable=True" if view is not None else _why_copy(col)
        raise ValueError(f"expected data NumPy can view without a copy, got {why}; "
                         "pass zero_copy_only=False for a copy")
    out = to_chunked_array(col).to_numpy()
    return out.copy() if writable and not out.flags.writeable else out


def array_protocol(col: ArrowColumn, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``numpy.asarray(col)`` under NumPy 2's ``copy=`` rules: a view where one is possible
    (``copy=True`` copies it), else a copy (``copy=False`` raises ValueError)."""
    view = _view(col)
    if view is None:
        if copy is False:
            raise ValueError(f"expected data NumPy can view without a copy (copy=False), got {_why_copy(col)}")
        out = to_chunked_array(col).to_numpy()
    else:
        out = view
    if dtype is not None and np.dtype(dtype) != out.dtype:
        if copy is False:
            raise ValueError(f"expected no copy (copy=False), but {out.dtype} -> {np.dtype(dtype)} is a copy")
        return out.astype(dtype)
    return out.copy() if copy and view is not None else out
