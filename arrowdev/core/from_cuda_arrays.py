"""Import from CuPy, numba and PyTorch arrays: ``__cuda_array_interface__`` (v3) and DLPack producers.

A 1-D contiguous device array becomes a one-chunk array over the same memory, which keeps the source
object alive. The CAI ``stream`` becomes the array's sync event (an event recorded on that stream); a
``stream`` of None or none at all is taken as the legacy default stream, since arrowdev reads on streams of its
own that do not wait for it and numba's ``to_device`` says None while its copy from pageable memory can still be
in flight (CUDA returns from such a copy once the bytes are staged). A CAI ``mask`` becomes the validity bitmap
(a packing copy, as is a bool array's data: Arrow stores bits, the array stores bytes). Strided or
multi-dimensional input is refused with a message that says how to make it contiguous. The export side (views of
a column for these libraries) is :mod:`arrowdev.interop.cuda_arrays`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _capsules
from .types import DataType

__all__ = ["from_cuda_array_interface", "from_dlpack"]

LEGACY_DEFAULT_STREAM = 1  # the CAI's name for CUDA's legacy default stream


def from_dlpack(obj: Any) -> tuple[DataType, list[Any]]:
    """A DLPack producer on a device, through CuPy (zero-copy; CPU tensors are read through NumPy by
    :mod:`.from_arrow`)."""
    from ..gpu import runtime

    return from_cuda_array_interface(runtime.cupy().from_dlpack(obj))


def _packed_bits(cp: Any, bools: Any) -> Any:
    return cp.packbits(bools.astype(cp.bool_), bitorder="little")


def from_cuda_array_interface(obj: Any) -> tuple[DataType, list[Any]]:
    """A ``__cuda_array_interface__`` producer as (type, [held array]), zero-copy."""
    from ..gpu import runtime

    cp = runtime.cupy()
    cai = obj.__cuda_array_interface__
    shape, dtype = tuple(cai["shape"]), np.dtype(cai["typestr"])
    if len(shape) != 1:
        raise ValueError(f"expected a 1-D array, got shape {shape}: reshape or ravel it first")
    n = shape[0]
    strides = cai.get("strides")
    if strides is not None and n > 1 and tuple(strides) != (dtype.itemsize,):
        raise ValueError(f"expected a contiguous array, got strides {tuple(strides)} for itemsize "
                         f"{dtype.itemsize}: make a contiguous copy first (cupy.ascontiguousarray)")
    address = cai["data"][0]
    kind, device_id = runtime.pointer_device(address) if address else ("cuda", cp.cuda.Device().id)
    device_code = {"cuda": 2, "cuda_managed": 13, "cuda_host": 3}.get(kind, 2)
    keep: list[Any] = [obj]
    stream = cai.get("stream")
    producer = runtime.external_stream(LEGACY_DEFAULT_STREAM if stream is None else stream, device_id)
    # the bits made below are queued on the producer's stream, after the data they read: the event recorded
    # after them says when both are ready (made on CuPy's current stream, legacy by default, they were read
    # on arrowdev's non-blocking stream before they were written: half the bits of 2**28 bools came out wrong)
    with cp.cuda.Device(device_id), producer:
        validity, null_count = 0, 0
        mask = cai.get("mask")
        if mask is not None:
            valid = cp.asarray(mask)
            bitmap = _packed_bits(cp, valid)
            validity, null_count = bitmap.data.ptr, int(n - int(cp.count_nonzero(valid)))
            keep.append(bitmap)
        if dtype == np.bool_:
            unowned = cp.cuda.UnownedMemory(address, n, obj, device_id)
            bits = _packed_bits(cp, cp.ndarray(n, cp.bool_, cp.cuda.MemoryPointer(unowned, 0)))
            address = bits.data.ptr
            keep.append(bits)
    event = runtime.SyncEvent(producer, device_id)  # the data is ready once this stream's work is done
    keep.append(event)
    import pyarrow as pa

    arrow_type = DataType.from_arrow(pa.from_numpy_dtype(dtype))
    held = _capsules.build(arrow_type, n, null_count, 0, [validity, address], [], device_type=device_code,
                           device_id=device_id, keepalive=keep, sync_event=event.address)
    return arrow_type, [held]
