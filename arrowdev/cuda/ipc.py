"""Cross-process zero-copy sharing of device columns and tables through CUDA IPC.

``export_ipc()`` returns bytes: a header (host name, device UUID, exporting process), the schema (the
Arrow IPC encoding of a schema, written by PyArrow), one CUDA IPC memory handle per underlying device
allocation, and per node of every chunk its length, null count, offset and, per buffer, (handle, offset
into that allocation). Buffers are usually sub-allocations of a pool block: the handle is for the block
(found with ``cuMemGetAddressRange``) and the offset locates the buffer in it, as NBEP 7 describes.

``ad.import_ipc(data)`` in another process on the same node finds the GPU by its UUID (processes may
number GPUs differently: dask-cuda gives each worker its own ``CUDA_VISIBLE_DEVICES``), maps each allocation once
(``cudaIpcOpenMemHandle``) and builds the same column or table over the mapped memory, zero-copy; it
speaks every protocol like any other arrowdev object, and its release closes the mappings
(``cudaIpcCloseMemHandle``) when the last array using them goes.

The rule for lifetime: **the exporting object must stay alive while any importer uses the memory** (the
exporter's memory is what the importer sees; CUDA keeps nothing alive for it). A handle whose exporter has
gone is stale: importing it raises. Before the bytes are returned, the exporter waits until the data is
ready (its sync events), so the importer can read at once.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from typing import Any

from .. import _capsules
from ..core import chunks as _chunked, layout
from ..errors import InvalidArrowError
from ..core.types import DataType, Device
from ..gpu import runtime

_MAGIC = b"ARROWDEV-CUDA-IPC-1\n"


@functools.lru_cache(maxsize=None)
def _device_uuid(device_id: int) -> str:
    props = runtime.cupy().cuda.runtime.getDeviceProperties(device_id)
    return bytes(props["uuid"]).hex()


def _device_with_uuid(uuid: str) -> int | None:
    """This process's index of the GPU with ``uuid``: indices differ between processes that see
    different GPUs (dask-cuda gives each worker its own ``CUDA_VISIBLE_DEVICES``), UUIDs do not."""
    return next((i for i in range(runtime.device_count()) if _device_uuid(i) == uuid), None)


def _allocation_base(address: int) -> int:
    driver = runtime.driver()
    err, base, _ = driver.cuMemGetAddressRange(address)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise InvalidArrowError(f"{address:#x} is not in a device allocation ({err.name})")
    return int(base)


class _Exporter:
    def __init__(self) -> None:
        self.handles: list[bytes] = []
        self.index: dict[int, int] = {}

    def buffer(self, address: int) -> list[int] | None:
        if not address:
            return None
        base = _allocation_base(address)
        if base not in self.index:
            self.index[base] = len(self.handles)
            self.handles.append(runtime.cupy().cuda.runtime.ipcGetMemHandle(base))
        return [self.index[base], address - base]

    def node(self, tree: layout.Node) -> dict[str, Any]:
        return {"length": tree.length, "offset": tree.offset, "null_count": tree.null_count,
                "buffers": [self.buffer(b) for b in tree.buffers], "children": [self.node(c) for c in tree.children],
                "dictionary": None if tree.dictionary is None else self.node(tree.dictionary)}


def export_ipc(obj: Any) -> bytes:
    """The IPC description of a device column or table (see the module docstring)."""
    import pyarrow as pa

    is_table = not isinstance(obj, _chunked.ColumnCore)
    col = obj.to_struct_array() if is_table else obj  # a table's record batches, as one struct column
    device = col.device
    if device.type != "cuda":
        raise ValueError(f"expected data on a CUDA device for export_ipc, got {device.type}: call to_device() first")
    runtime.check_device(device.id)  # DeviceUnavailableError, naming why, where CuPy or the driver is missing
    _chunked.wait_for_producers(col)
    exporter = _Exporter()
    chunks = [exporter.node(layout.Node.of(held)) for held in _chunked.exportable_chunks(col)]
    field = pa.field(col.type)
    header = {"kind": "table" if is_table else "column", "host": socket.gethostname(), "pid": os.getpid(),
              "device": device.id, "device_uuid": _device_uuid(device.id),
              "handles": [h.hex() for h in exporter.handles], "chunks": chunks}
    schema = pa.schema([field]).serialize().to_pybytes()
    encoded = json.dumps(header).encode()
    return _MAGIC + len(encoded).to_bytes(8, "little") + encoded + schema


class _Mapping:
    """One opened IPC allocation; closed when the last array using it goes."""

    def __init__(self, handle: bytes, device_id: int) -> None:
        cp = runtime.cupy()
        with cp.cuda.Device(device_id):
            try:
                self.base = cp.cuda.runtime.ipcOpenMemHandle(handle, cp.cuda.runtime.cudaIpcMemLazyEnablePeerAccess)
            except cp.cuda.runtime.CUDARuntimeError as e:
                raise InvalidArrowError(f"cannot open a CUDA IPC handle (stale: its exporter has gone, or not "
                                        f"from this node): {e}") from None
        self.device_id = device_id

    def __del__(self) -> None:
        base = getattr(self, "base", 0)
        if base:
            cp = runtime.cupy()
            with cp.cuda.Device(self.device_id):
                cp.cuda.runtime.ipcCloseMemHandle(base)


def import_ipc(data: bytes) -> Any:
    """A column or table over another process's device memory, from its ``export_ipc()`` bytes."""
    import pyarrow as pa

    if not isinstance(data, (bytes, bytearray, memoryview)) or not bytes(data[:len(_MAGIC)]) == _MAGIC:
        raise ValueError("expected the bytes of ArrowColumn.export_ipc() / ArrowTable.export_ipc()")
    data = bytes(data)
    size = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 8], "little")
    start = len(_MAGIC) + 8
    header = json.loads(data[start:start + size])
    if header["host"] != socket.gethostname():
        raise InvalidArrowError(f"the IPC handle comes from another node ({header['host']!r}); this is "
                                f"{socket.gethostname()!r}: CUDA IPC works between processes of one node")
    device_id = _device_with_uuid(header["device_uuid"])
    if device_id is None:
        raise InvalidArrowError(f"the IPC handle's GPU (UUID {header['device_uuid']}) is not visible in this "
                                f"process (see CUDA_VISIBLE_DEVICES)")
    field = pa.ipc.read_schema(pa.py_buffer(data[start + size:])).field(0)
    dtype = DataType.from_arrow(field)
    mappings = [_Mapping(bytes.fromhex(h), device_id) for h in header["handles"]]
    device = Device("cuda", device_id)
    chunks = [_build(dtype, node, mappings, device) for node in header["chunks"]]
    return _chunked.make(header["kind"], dtype, chunks)


def _build(dtype: DataType, node: dict[str, Any], mappings: list[_Mapping], device: Device) -> Any:
    buffers, keep = [], []
    for entry in node["buffers"]:
        if entry is None:
            buffers.append(0)
        else:
            mapping = mappings[entry[0]]
            buffers.append(mapping.base + entry[1])
            keep.append(mapping)
    children = [_build(child_type, child, mappings, device)
                for child_type, child in zip(dtype.children, node["children"], strict=True)]
    dictionary = None if node["dictionary"] is None else _build(dtype.value_type, node["dictionary"], mappings, device)
    return _capsules.build(dtype, node["length"], node["null_count"], node["offset"], buffers, children, dictionary,
                           device_type=device.code, device_id=device.id, keepalive=keep)
