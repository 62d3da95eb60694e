"""Rows chosen by position: ``col[::2]``, ``col[[3, 1]]``, ``col.take(indices)`` and the same on tables.

PyArrow's ``__getitem__`` takes a slice with a step (it takes the rows, a copy) and refuses a list;
Polars' takes both (``gather``). arrowdev takes both: a slice of step 1 stays a zero-copy slice, a slice
with another step and an integer sequence (list, tuple, integer NumPy array, an integer Arrow column)
take rows, a copy. Where the two disagree, PyArrow's ``take`` is followed: a negative index is an
error (Polars counts it from the end), and so is an index past the end.

CPU data is taken by PyArrow; fixed-width data on a GPU (numbers, temporal types, bool) is gathered by
CuPy on the device; other types on a GPU are refused with the copy to make.
"""

from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..core.chunks import ColumnCore as ArrowColumn  # an ArrowColumn: its public API and its core
    from ..core.types import DataType

__all__ = ["is_row_selection", "row_indices", "take_column"]


def is_row_selection(key: Any) -> bool:
    """True for what selects rows by position as a copy: a slice whose step is not 1, or a sequence of
    integers (not a string, not a single int)."""
    if isinstance(key, builtins.slice):
        return key.step not in (None, 1)
    if isinstance(key, np.ndarray):
        return key.ndim > 0  # a 0-d array is an index
    return isinstance(key, (list, tuple)) or hasattr(key, "__arrow_c_array__") or hasattr(key, "__arrow_c_stream__")


def row_indices(key: Any, length: int) -> np.ndarray:
    """The row numbers (int64) ``key`` selects among ``length`` rows: a slice's with its step, or a
    sequence's, each checked to be in [0, length) (PyArrow's ``take`` refuses negative ones too)."""
    if isinstance(key, builtins.slice):
        return np.arange(*key.indices(length), dtype=np.int64)
    values = _as_numpy(key)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D sequence of row indices, got shape {values.shape}")
    if values.size and not np.issubdtype(values.dtype, np.integer):
        kind = "bools (a mask: filter with PyArrow)" if values.dtype == np.bool_ else f"{values.dtype} values"
        raise TypeError(f"expected integer row indices, got {kind}")
    indices = values.astype(np.int64, copy=False)
    bad = indices[(indices < 0) | (indices >= length)]
    if bad.size:
        raise IndexError(f"row index {int(bad[0])} out of range for {length} rows (as in PyArrow's take, "
                         "indices count from 0 and are not negative)")
    return indices


def _as_numpy(key: Any) -> np.ndarray:
    if isinstance(key, np.ndarray):
        return key
    if isinstance(key, (list, tuple)):
        if any(isinstance(v, bool) or not hasattr(v, "__index__") for v in key):
            bad = next(v for v in key if isinstance(v, bool) or not hasattr(v, "__index__"))
            raise TypeError(f"expected integer row indices, got {type(bad).__name__} {bad!r}")
        return np.array([operator.index(v) for v in key], dtype=np.int64)
    import pyarrow as pa

    indices = pa.chunked_array(key) if hasattr(key, "__arrow_c_stream__") else pa.array(key)
    if indices.null_count:
        raise ValueError("expected row indices without nulls")
    return np.asarray(indices.to_numpy(zero_copy_only=False))


def take_column(col: ArrowColumn, indices: np.ndarray) -> tuple[DataType, list[Any]]:
    """The rows ``indices`` (checked by :func:`row_indices`) of ``col``: (type, held arrays), a copy on
    the column's device."""
    if col.device.is_cpu_readable:
        from .pyarrow import take

        return take(col, indices)
    from .cuda_arrays import gather

    return gather(col, indices)
