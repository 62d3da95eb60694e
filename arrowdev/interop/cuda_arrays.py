"""CuPy, numba and PyTorch views of columns through ``__cuda_array_interface__`` (v3) and DLPack (the import
side is :mod:`arrowdev.core.from_cuda_arrays`).

Export: a one-chunk fixed-width column on a GPU exports CAI and DLPack views of its buffer. The
view keeps the column alive; consumers wait on the column's sync events (CAI: the ``stream``
field names arrowdev's stream, made to wait on them; DLPack: the consumer's stream is made to
wait). Validity goes out as the CAI ``mask``, which CuPy, numba and PyTorch refuse rather than
misread; DLPack has no validity, so a column with nulls refuses to export through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _capsules
from ..core import chunks as _chunked
from ..core.types import DataType

if TYPE_CHECKING:
    from ..core.chunks import ColumnCore as ArrowColumn  # an ArrowColumn: its public API and its core

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


# ---- export --------------------------------------------------------------------------------------

_DTYPES: dict[str, np.dtype] = {}  # a fixed-width type's format -> its NumPy dtype (CuPy asks twice a view)


def _numpy_dtype(col: ArrowColumn) -> np.dtype:
    known = _DTYPES.get(col.type.format) if col.type.value_type is None else None
    if known is not None:
        return known
    import pyarrow as pa

    arrow = col.type.to_pyarrow()
    if col.type.value_type is not None or pa.types.is_boolean(arrow) or not pa.types.is_primitive(arrow):
        raise TypeError(f"expected a fixed-width numeric or temporal column, got {col.type}"
                        + (": bool columns are bits; use to_cupy(), which unpacks them (a copy)"
                           if pa.types.is_boolean(arrow) else ""))
    dtype = np.dtype(arrow.to_pandas_dtype())
    if dtype.itemsize * 8 != arrow.bit_width:  # date32: pandas' datetime64[ms] is 8 bytes a value, date32's 4
        raise TypeError(f"expected a type with a NumPy dtype of the same width, got {col.type} ({arrow.bit_width} "
                        f"bits, NumPy's nearest {dtype} has {dtype.itemsize * 8}): cast it first (date32 to "
                        f"date64 or int32)")
    _DTYPES[col.type.format] = dtype
    return dtype


def _one_chunk(col: ArrowColumn) -> Any:
    if col.num_chunks != 1:
        raise ValueError(f"expected one chunk for a zero-copy view, got {col.num_chunks}: "
                         "pass the column's chunks one by one, or concatenate with pa.array(col)")
    return _chunked.chunks(col)[0]


def cuda_array_interface(col: ArrowColumn) -> dict[str, Any]:
    """The ``__cuda_array_interface__`` (v3) of a one-chunk fixed-width column on a GPU."""
    from ..gpu import runtime

    if col.device.type not in ("cuda", "cuda_managed"):
        raise AttributeError(f"a column on {col.device.type} has no __cuda_array_interface__: call to_device() first")
    dtype = _numpy_dtype(col)
    held = _one_chunk(col)
    stream = runtime.stream_for(col.device.id)
    events = _chunked.sync_events(col)
    runtime.wait_on_events(stream, events)
    mask = _mask(col, held, stream) if col.null_count else None
    # with no producer to wait for and nothing queued on arrowdev's stream the data is ready: no stream is named,
    # which spares the consumer a wait (CuPy synchronises a named stream)
    ready = not events and stream.done
    return {
        "shape": (held.length,),
        "typestr": dtype.str,
        "descr": [("", dtype.str)],
        "data": (held.buffers[1] + held.offset * dtype.itemsize if held.length else 0, False),
        "strides": None,
        "version": 3,
        "stream": None if ready else stream.ptr,
        "mask": mask,
    }


def _mask(col: ArrowColumn, held: Any, stream: Any) -> Any:
    """Validity as CAI wants it: one byte per row, a view-producing object (a copy of the bits), made on
    ``stream`` (arrowdev's, which waits for the column's producers and which the interface names)."""
    from ..gpu import runtime

    cp = runtime.cupy()
    first, end = held.offset // 8, (held.offset + held.length + 7) // 8
    with cp.cuda.Device(col.device.id), stream:
        mem = cp.cuda.UnownedMemory(held.buffers[0] + first, end - first, col, col.device.id)
        bits = cp.ndarray(end - first, cp.uint8, cp.cuda.MemoryPointer(mem, 0))
        start = held.offset - 8 * first
        return cp.unpackbits(bits, bitorder="little")[start:start + held.length].astype(cp.bool_)


def cupy_view(col: ArrowColumn) -> Any:
    """A CuPy array over the column's data (zero-copy; keeps the column alive)."""
    from ..gpu import runtime

    cp = runtime.cupy()
    cai = cuda_array_interface(col)
    n, dtype = cai["shape"][0], np.dtype(cai["typestr"])
    with cp.cuda.Device(col.device.id):
        # CuPy's current stream waits for the column's producers (C7): the array is read there, and a view made
        # here skips the CAI ``stream`` field that would otherwise order it (a sum right after a UDF read the
        # output before its kernel had run: the scale job's statistics on the 4-GPU machine)
        runtime.wait_on_events(cp.cuda.get_current_stream(), list(_chunked.sync_events(col)))
        mem = cp.cuda.UnownedMemory(cai["data"][0], n * dtype.itemsize, col, col.device.id)
        return cp.ndarray(n, dtype, cp.cuda.MemoryPointer(mem, 0))


def to_cupy(col: ArrowColumn) -> Any:
    """The column as a CuPy array: zero-copy for fixed-width data, an unpacking copy for bool.
    Refuses columns with nulls (there is no slot for validity in a plain array)."""
    from ..gpu import runtime

    if col.null_count:
        raise ValueError(f"the column has {col.null_count} nulls: a CuPy array cannot hold them")
    if col.type.id != "bool":
        return cupy_view(col)
    cp = runtime.cupy()
    held = _one_chunk(col)
    first, end = held.offset // 8, (held.offset + held.length + 7) // 8
    with cp.cuda.Device(col.device.id):
        # the unpacking runs on CuPy's current stream (the caller's array lives there): that stream waits for the
        # column's producers, the host does not (as for cupy_view)
        runtime.wait_on_events(cp.cuda.get_current_stream(), list(_chunked.sync_events(col)))
        mem = cp.cuda.UnownedMemory(held.buffers[1] + first, max(end - first, 1), col, col.device.id)
        bits = cp.ndarray(end - first, cp.uint8, cp.cuda.MemoryPointer(mem, 0))
        start = held.offset - 8 * first
        return cp.unpackbits(bits, bitorder="little")[start:start + held.length].astype(cp.bool_)


def dlpack_device(col: ArrowColumn) -> tuple[int, int]:
    device = col.device
    if device.type == "cpu":
        return (_KDL_CPU, 0)
    codes = {"cuda": _KDL_CUDA, "cuda_host": _KDL_CUDA_HOST, "cuda_managed": _KDL_CUDA_MANAGED}
    if device.type not in codes:
        raise TypeError(f"DLPack cannot describe {device.type} memory")
    return (codes[device.type], device.id)


def dlpack(col: ArrowColumn, stream: Any = None, **kwargs: Any) -> Any:
    """A DLPack capsule over the column's data (one chunk, fixed width, no nulls)."""
    if col.null_count:
        raise ValueError(f"the column has {col.null_count} nulls and DLPack has no validity: "
                         "fill or drop them first")
    if col.device.is_cpu_readable:
        _chunked.wait_for_producers(col)
        return _numpy_view(col).__dlpack__(stream=stream, **kwargs)
    from ..gpu import runtime

    view = cupy_view(col)  # its stream field already waits on the column's events
    with runtime.stream_for(col.device.id):
        return view.__dlpack__(stream=stream, **kwargs)


def _numpy_view(col: ArrowColumn) -> np.ndarray:
    """A NumPy view of CPU data through PyArrow (its buffers keep the column's export alive)."""
    _numpy_dtype(col)
    _one_chunk(col)
    return col.to_pyarrow().chunk(0).to_numpy(zero_copy_only=True)


# ---- rows by position ----------------------------------------------------------------------------

def gather(col: ArrowColumn, indices: np.ndarray) -> tuple[DataType, list[Any]]:
    """Rows ``indices`` (int64, in range) of a fixed-width column on a GPU (numbers, temporal types,
    bool), gathered by CuPy on arrowdev's stream (a copy): its type and one chunk."""
    from ..gpu import runtime

    dtype = col.type
    plain = dtype.value_type is None and not dtype.children and dtype.storage_id != "na"
    bits = dtype.element_bits(1) if plain else 0
    if bits not in (1, 8, 16, 32, 64) or dtype.storage_id in ("string", "binary", "large_string", "large_binary"):
        raise TypeError(f"rows of a {dtype} column on a GPU cannot be taken there (CuPy gathers fixed-width "
                        "numbers, temporal types and bools): take them on the host, "
                        "col.to_host().take(indices).to_device(), or in a UDF")
    cp = runtime.cupy()
    device_id = col.device.id
    stream = runtime.stream_for(device_id)
    runtime.wait_on_events(stream, _chunked.sync_events(col))
    raw = np.dtype(np.bool_) if bits == 1 else np.dtype(f"u{bits // 8}")
    with cp.cuda.Device(device_id), stream:
        values, valid = [], []
        for held in _chunked.chunks(col):
            values.append(_unpacked(cp, col, held.buffers[1], held) if bits == 1 else _raw_values(cp, col, held, raw))
            valid.append(_unpacked(cp, col, held.buffers[0], held) if held.buffers[0] and held.null_count != 0
                         else cp.ones(held.length, cp.bool_))
        where = cp.asarray(indices)
        taken = (cp.concatenate(values) if values else cp.empty(0, raw))[where]
        mask = (cp.concatenate(valid) if valid else cp.empty(0, cp.bool_))[where]
        n = len(indices)
        data = cp.packbits(taken, bitorder="little") if bits == 1 else cp.ascontiguousarray(taken)
        null_count = n - int(cp.count_nonzero(mask))
        bitmap = cp.packbits(mask, bitorder="little") if null_count else None
        event = runtime.SyncEvent(stream, device_id)  # recorded after every step above: readers wait on it
    addresses = [bitmap.data.ptr if bitmap is not None else 0, data.data.ptr if n else 0]
    held = _capsules.build(dtype, n, null_count, 0, addresses, [], device_type=col.device.code,
                           device_id=device_id, keepalive=[data, bitmap, event], sync_event=event.address)
    return dtype, [held]


def _raw_values(cp: Any, col: ArrowColumn, held: Any, raw: np.dtype) -> Any:
    """A chunk's values as unsigned integers of their width (a view)."""
    if not held.length:
        return cp.empty(0, raw)
    mem = cp.cuda.UnownedMemory(held.buffers[1] + held.offset * raw.itemsize, held.length * raw.itemsize, col,
                                col.device.id)
    return cp.ndarray(held.length, raw, cp.cuda.MemoryPointer(mem, 0))


def _unpacked(cp: Any, col: ArrowColumn, address: int, held: Any) -> Any:
    """A chunk's bitmap at ``address`` (validity or bool data) as one bool per row (a copy)."""
    if not held.length:
        return cp.empty(0, cp.bool_)
    first, end = held.offset // 8, (held.offset + held.length + 7) // 8
    mem = cp.cuda.UnownedMemory(address + first, end - first, col, col.device.id)
    bits = cp.ndarray(end - first, cp.uint8, cp.cuda.MemoryPointer(mem, 0))
    start = held.offset - 8 * first
    return cp.unpackbits(bits, bitorder="little")[start:start + held.length].astype(cp.bool_)
