"""Import: any Arrow producer -> a DataType and held arrays (``CDeviceArray``), zero-copy.

The protocols are tried in one fixed order, device before CPU and a stream before a single array
(a single-array export of chunked data would concatenate):

1. ``__arrow_c_device_stream__``   2. ``__arrow_c_device_array__``
3. ``__arrow_c_stream__``          4. ``__arrow_c_array__``

Bare capsules work too: a stream capsule, or a ``(schema, array)`` capsule pair as the array
protocols return it. Python sequences and NumPy arrays go through ``pyarrow.array`` first. GPU
arrays (CuPy, numba, PyTorch) come in through ``__cuda_array_interface__``, then ``__dlpack__``
(:mod:`.from_cuda_arrays`).
Every array is checked against its type before arrowdev hands it out (docs/architecture.md C9).
"""

from __future__ import annotations

from typing import Any

from .. import _capsules
from .types import DataType, type_of_schema

_PROTOCOLS = ("__arrow_c_device_stream__", "__arrow_c_device_array__", "__arrow_c_stream__",
              "__arrow_c_array__")
_capsules.register_protocols(_PROTOCOLS)  # the one order: import_from (capsules/py_import.c) walks it too


_KDL_CPU = 1  # DLPack's kDLCPU

_capsule_name = _capsules.capsule_name


def read_arrow(obj: Any, schema: Any = None) -> tuple[DataType, list[Any]]:
    """The type and the arrays of any Arrow producer (see the module docstring)."""
    found = import_from(obj) if schema is None else None
    if found is not None and found[0] is not None:
        return found
    return read_arrow_after(obj, schema, found)


def import_from(obj: Any) -> tuple[DataType | None, Any] | None:
    """The hot path of :func:`read_arrow`, natively (capsules/py_import.c): for an object whose
    first protocol is ``__arrow_c_device_array__`` (PyArrow arrays and record batches), its
    ``(dtype, [held])`` (its type from the native type cache, or parsed into it), else, when the
    protocol returned no schema and array capsule pair, ``(None, what it returned)``; None for any
    other object (nothing called). Pass the result on to :func:`read_arrow_after`."""
    return _capsules.import_from(obj)


def read_arrow_after(obj: Any, schema: Any, found: tuple[Any, Any] | None) -> tuple[DataType, list[Any]]:
    """:func:`read_arrow` for what :func:`import_from` did not finish."""
    if found is not None:
        return _from_exported(obj, "__arrow_c_device_array__", found[1])
    if isinstance(obj, tuple) and len(obj) == 2 and _capsule_name(obj[0]) == "arrow_schema":
        return _from_pair(obj[0], obj[1])
    name = _capsule_name(obj)
    if name is not None:
        return _from_capsule(obj, name, schema)
    requested = None if schema is None else DataType.from_arrow(schema).__arrow_c_schema__()
    for protocol in _PROTOCOLS:
        method = getattr(obj, protocol, None)
        if method is not None:
            return _from_exported(obj, protocol, _call_with_request(method, requested))
    if isinstance(obj, (list, range)) or type(obj).__module__ == "numpy":
        return read_arrow(_pyarrow_array(obj, schema))
    if hasattr(obj, "__cuda_array_interface__"):
        from .from_cuda_arrays import from_cuda_array_interface

        return from_cuda_array_interface(obj)
    if hasattr(obj, "__dlpack__"):
        if obj.__dlpack_device__()[0] == _KDL_CPU:  # CPU tensors through NumPy
            import numpy as np

            return read_arrow(np.from_dlpack(obj))
        from .from_cuda_arrays import from_dlpack

        return from_dlpack(obj)
    raise TypeError(
        "expected an Arrow object (one with __arrow_c_device_stream__, __arrow_c_device_array__, "
        "__arrow_c_stream__ or __arrow_c_array__), a capsule, a list, a NumPy array, or a GPU array "
        f"(__cuda_array_interface__ / __dlpack__), got {type(obj).__name__}")


def _pyarrow_array(values: Any, schema: Any) -> Any:
    """A Python list or a NumPy array made an Arrow array by ``pyarrow.array``; what it refuses (a 2-D
    array, values of several types) raises an error that says what a column is made from."""
    import pyarrow as pa

    shape = getattr(values, "shape", None)
    if shape is not None and len(shape) != 1:
        raise ValueError(f"expected a 1-D NumPy array (one column), got shape {shape}: pass one column at a "
                         "time (arr[:, j]), or arr.ravel(); ad.table({name: arr[:, j], ...}) makes a table")
    try:
        return pa.array(values, type=None if schema is None else DataType.from_arrow(schema).to_pyarrow())
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        error = TypeError if isinstance(e, TypeError) else ValueError
        raise error(f"expected a list (or NumPy array) of values of one type, which PyArrow makes one column "
                    f"(it infers the type from the values, or schema= gives it); it refused this "
                    f"{type(values).__name__}: {e}") from e


def _from_exported(obj: Any, protocol: str, exported: Any) -> tuple[DataType, list[Any]]:
    """What ``obj.<protocol>()`` returned, read: a stream, or a (schema, array) capsule pair."""
    if protocol.endswith("stream__"):
        return read_stream(exported)
    if not (isinstance(exported, tuple) and len(exported) == 2):
        raise TypeError(f"{type(obj).__name__}.{protocol}() returned {type(exported).__name__}, "
                        "expected a (schema, array) pair of capsules")
    return _from_pair(*exported)


def _call_with_request(method: Any, requested: Any) -> Any:
    """Calls an export method, asking for ``requested`` (a schema capsule) when given; a producer
    that cannot honour requests (NotImplementedError) is asked again for its native data."""
    if requested is None:
        return method()
    try:
        return method(requested)
    except NotImplementedError:
        return method()


def _from_capsule(capsule: Any, name: str, schema: Any) -> tuple[DataType, list[Any]]:
    if name in ("arrow_array_stream", "arrow_device_array_stream"):
        return read_stream(capsule)
    if name in ("arrow_array", "arrow_device_array"):
        if schema is None:
            raise TypeError(f"a bare {name} capsule needs its schema: pass schema=, or a (schema, array) pair")
        return _from_pair(DataType.from_arrow(schema).__arrow_c_schema__(), capsule)
    raise ValueError(
        "expected a capsule named arrow_array_stream, arrow_device_array_stream, arrow_array or "
        f"arrow_device_array, got one named {name!r}")


def _from_pair(schema_capsule: Any, array_capsule: Any) -> tuple[DataType, list[Any]]:
    found = _capsules.import_pair(schema_capsule, array_capsule)  # typed (parsed on a miss), checked, then moved
    if found is None:  # not a live schema capsule: type_of_schema says what is wrong with it
        found = _capsules.import_pair(schema_capsule, array_capsule, type_of_schema(schema_capsule))
    dtype, held = found
    return dtype, [held]


def read_stream(capsule: Any) -> tuple[DataType, list[Any]]:
    """Drains a stream capsule: the schema, then every array, each checked."""
    stream = _capsules.import_stream(capsule)
    try:
        dtype = type_of_schema(stream.get_schema())
        arrays = []
        while (held := stream.get_next()) is not None:
            arrays.append(typed(dtype, held))
        return dtype, arrays
    finally:
        stream.release()


def typed(dtype: DataType, held: Any) -> Any:
    """``held`` as an array of ``dtype``, after every node is checked against it (buffer and child
    counts, dictionaries, null counts, child lengths), in the native core: capsules/check.c."""
    return held.with_type(dtype)


def check_tree(dtype: DataType, held: Any) -> None:
    """Checks every node of a held array against a type, as :func:`typed` does (InvalidArrowError)."""
    typed(dtype, held)
