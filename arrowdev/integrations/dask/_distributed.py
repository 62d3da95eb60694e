"""arrowdev's registrations with Dask and distributed, made when this module is imported.

- distributed's ``dask`` family (TCP, spilling to host and disk): host frames of the rows in range
  (device data is copied to pinned host memory; it lands on the receiving worker's GPU); CPU buffers
  larger than TCP's shard size (``distributed.comm.shard``) go in row ranges under it, a chunk each on
  the receiver.
- distributed's ``cuda`` family (UCX between GPUs): device frames with ``__cuda_array_interface__``,
  returned only once the data's producers have finished; received frames are used in place.
- ``dask.sizeof``: the bytes of the rows in range, so that workers account partitions right.
- dask-cuda (when installed): ``is_device_object`` is true for tables and columns on a GPU, so dask-cuda
  counts them as device memory and spills them (device -> host -> disk) past ``device_memory_limit``;
  ``get_device_memory_objects`` finds them for its JIT-unspill mode.

distributed has no entry point for serializers, so this module is imported (see docs/distributed.md):
by ``import arrowdev.dask``; by ``import arrowdev`` in a process that has already imported distributed
(a Dask worker unpickling its first task); and by the first pickling of an arrowdev object in a process
that imported distributed after arrowdev (that first send goes through pickle protocol 5, also
zero-copy). No ``dask.sizeof`` entry point: it would import arrowdev on every ``import dask``.
"""

from __future__ import annotations

from typing import Any

import dask
from dask.sizeof import sizeof
from dask.utils import parse_bytes

from ...serialize import frames as _serialize
from ...column import ArrowColumn
from ...table import ArrowTable

_DEVICE_TYPES = ("cuda", "cuda_managed")


def nbytes(obj: ArrowColumn | ArrowTable) -> int:
    """Bytes of the buffers of the rows in range, what a send carries (shared buffers counted once)."""
    return _serialize.nbytes(obj)


def _sizeof(obj: ArrowColumn | ArrowTable) -> int:
    return nbytes(obj) + 200  # plus the Python objects and the header


def _on_device(obj: ArrowColumn | ArrowTable) -> bool:
    return obj.device.type in _DEVICE_TYPES


def _host_frames(obj: ArrowColumn | ArrowTable) -> tuple[dict[str, Any], list[Any]]:
    """The ``dask`` family's frames: CPU data whose buffers pass the TCP comm's shard size travels in row
    ranges under it, so that TCP sends no frame in shards (its receiver copies a frame's shards back
    together, except the first frame's: docs/distributed.md, "Large buffers over TCP")."""
    return _serialize.host_frames(obj, piece_bytes=_shard_bytes())


def _shard_bytes() -> int:
    """The size past which distributed's TCP comm cuts a frame into shards. TCP reads
    ``distributed.comm.shard`` once, when ``distributed.comm.tcp`` is imported (a worker's config set later
    does not change it), so its value is read where TCP keeps it; the config where it is not there."""
    try:
        from distributed.comm.tcp import TCP

        return int(TCP.max_shard_size)
    except (ImportError, AttributeError, TypeError, ValueError):
        return parse_bytes(dask.config.get("distributed.comm.shard"))


def _deserialize(header: dict[str, Any], frames: list[Any]) -> Any:
    return _serialize.from_frames(header, frames)


def register() -> None:
    """Registers arrowdev's types with dask.sizeof, distributed (when installed) and dask-cuda (when
    installed). Idempotent."""
    for cls in (ArrowColumn, ArrowTable):
        sizeof.register(cls)(_sizeof)
    try:
        from distributed.protocol.cuda import cuda_deserialize, cuda_serialize
        from distributed.protocol.serialize import dask_deserialize, dask_serialize
    except ImportError:
        return
    for cls in (ArrowColumn, ArrowTable):
        dask_serialize.register(cls)(_host_frames)
        dask_deserialize.register(cls)(_deserialize)
        cuda_serialize.register(cls)(_serialize.device_frames)
        cuda_deserialize.register(cls)(_deserialize)
    _register_dask_cuda()


def _register_dask_cuda() -> None:
    try:
        from dask_cuda.get_device_memory_objects import dispatch as device_memory_objects
        from dask_cuda.is_device_object import is_device_object
    except ImportError:
        return
    for cls in (ArrowColumn, ArrowTable):
        is_device_object.register(cls)(_on_device)
        device_memory_objects.register(cls)(lambda obj: [obj] if _on_device(obj) else [])


register()
