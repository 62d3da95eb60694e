"""Which Arrow types UDFs take and return, and as what numba sees them.

Inputs are read in place: integers and floats as themselves, bool as bits (unpacked per row in
the kernel), dates, times, timestamps and durations as their integer storage, decimal32 and
decimal64 as their scaled integers. Outputs are what numba's typing of the UDF says (integers
widen as numba widens them), unless ``out_type=`` names an Arrow type, whose storage the kernel
casts to.
"""

from __future__ import annotations

import numpy as np

from ...core.types import DataType
from ..spec import Kind

# nanoarrow storage type -> NumPy dtype of the data buffer as the kernel reads it
_ELEMENTS = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "half_float": np.float16, "float": np.float32, "double": np.float64,
    "decimal32": np.int32, "decimal64": np.int64,
}


class UnsupportedTypeError(TypeError):
    """A column type a numeric UDF cannot take or make."""


# string storage -> the input kind kernels know it by (see codegen.kernel_source)
STRING_KINDS = {"string": Kind.UTF8_32, "large_string": Kind.UTF8_64, "string_view": Kind.UTF8_VIEW}


def input_kind(dtype: DataType) -> Kind:
    """How a kernel reads an input column: a numeric kind, bits (bool) or a string kind."""
    if dtype.value_type is None and dtype.storage_id in STRING_KINDS:
        return STRING_KINDS[dtype.storage_id]
    np_dtype = element_dtype(dtype)
    return Kind.BITS if np_dtype is None else Kind(np_dtype.str)


def element_dtype(dtype: DataType) -> np.dtype | None:
    """The NumPy dtype a kernel reads a numeric input column as; None for bool (bits)."""
    storage = dtype.storage_id
    if storage == "bool":
        return None
    if storage in _ELEMENTS and dtype.value_type is None:
        return np.dtype(_ELEMENTS[storage])
    raise UnsupportedTypeError(f"expected a numeric, bool, temporal or string column for a UDF, got {dtype}")


def output_types(result_type, out_type: DataType | None) -> tuple[DataType, np.dtype | None]:
    """(Arrow type of the output, NumPy dtype the kernel writes; None for bool bits) for what the
    UDF returns (an Optional is unwrapped: the None part becomes nulls)."""
    import pyarrow as pa
    from numba.core import types

    if isinstance(result_type, types.Optional):
        result_type = result_type.type
    if out_type is not None:
        return out_type, element_dtype(out_type)
    if isinstance(result_type, types.Boolean):
        return DataType.from_arrow(pa.bool_()), None
    if isinstance(result_type, (types.Integer, types.Float)):
        np_dtype = np.dtype(str(result_type))
        return DataType.from_arrow(pa.from_numpy_dtype(np_dtype)), np_dtype
    raise UnsupportedTypeError(f"the UDF returns {result_type}; expected a number or a bool "
                               "(or ad.NA); pass out_type= to choose the output type")
