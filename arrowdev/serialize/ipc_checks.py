"""CUDA IPC descriptions are untrusted too: ``import_ipc`` checks the bytes of ``export_ipc()`` the way received
frames are checked (:mod:`arrowdev.serialize.checks`), before any handle is mapped (docs/validation.md, "CUDA IPC").

Before mapping: the layout of the bytes (magic, header length, JSON, schema), the header's fields (kind, host, the
exporting process, device, handles of 64 bytes, one allocation size per handle), every node against its type with
each buffer (handle, offset) seen as a frame of the allocation's remaining bytes (sizes by the layout rules, frame
indices, child lengths, null counts within the length), the host (CUDA IPC works within one node) and, on Linux, the
exporting process: one that has exited (or whose pid now names another process) freed its memory, so its handles
are refused without being opened. After mapping (cuda/ipc.py): each mapping's size against the header's, then the
values inside the buffers (offsets, indices, views, run ends, union ids, null counts), on the GPU.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .checks import Shape, check_columns, schema_of
from .values import Frame, SizesOnly, refuse

__all__ = ["MAGIC", "check_after_mapping", "check_before_mapping", "check_mapped_sizes", "exporter_identity",
           "read_export"]

MAGIC = b"ARROWDEV-CUDA-IPC-1\n"
_HANDLE_BYTES = 64  # a cudaIpcMemHandle_t
_NODE_KEYS = ("length", "null_count", "offset", "buffers", "children", "dictionary")


def read_export(data: Any) -> tuple[dict[str, Any], bytes]:
    """(header, schema bytes) of ``export_ipc()`` bytes: magic, an 8-byte header length, the JSON header, the
    schema; InvalidArrowError (a ValueError) for anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or bytes(data[:len(MAGIC)]) != MAGIC:
        raise refuse("import_ipc", "the bytes of ArrowColumn.export_ipc() / ArrowTable.export_ipc()",
                     type(data).__name__ if not isinstance(data, (bytes, bytearray, memoryview)) else "other bytes")
    data = bytes(data)
    start = len(MAGIC) + 8
    size = int.from_bytes(data[len(MAGIC):start], "little")
    if len(data) < start or size > len(data) - start:
        raise refuse("import_ipc header", f"a header length within the {len(data) - start} bytes after it", size)
    try:
        header = json.loads(data[start:start + size])
    except (ValueError, UnicodeDecodeError) as e:
        raise refuse("import_ipc header", "JSON", f"bytes that are not ({e})") from None
    return header, data[start + size:]


def check_export_header(header: Any) -> None:
    """The header's own fields (its nodes are checked by :func:`frame_nodes`)."""
    if not isinstance(header, dict):
        raise refuse("import_ipc header", "a JSON object", type(header).__name__)
    if header.get("kind") not in ("column", "table"):
        raise refuse("kind", "'column' or 'table'", repr(header.get("kind"))[:80])
    for key, kind in (("host", str), ("device_uuid", str), ("pid", int), ("device", int)):
        if type(header.get(key)) is not kind:
            raise refuse(key, f"a {kind.__name__}", repr(header.get(key))[:80])
    handles, sizes = header.get("handles"), header.get("sizes")
    if not isinstance(handles, list) or not all(_is_handle(h) for h in handles):
        raise refuse("handles", f"a list of CUDA IPC handles ({_HANDLE_BYTES} bytes in hex)", repr(handles)[:80])
    if not isinstance(sizes, list) or len(sizes) != len(handles) or not all(
            type(n) is int and 0 <= n < 2**62 for n in sizes):
        raise refuse("sizes", f"the size of each of the {len(handles)} allocations", repr(sizes)[:80])
    if not isinstance(header.get("chunks"), list):
        raise refuse("chunks", "a list of chunk nodes", repr(header.get("chunks"))[:80])


def _is_handle(value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 2 * _HANDLE_BYTES:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


def frame_nodes(node: Any, path: str, places: list[tuple[int, int]]) -> list:
    """An export's node (a JSON object) as a frame header's node (a list of six) whose buffer entries name frames;
    ``places`` gets each frame's (handle index, offset into the allocation)."""
    if not isinstance(node, dict) or any(key not in node for key in _NODE_KEYS):
        raise refuse(path, f"a node with {', '.join(_NODE_KEYS)}", repr(node)[:80])
    buffers = node["buffers"]
    if not isinstance(buffers, list):
        raise refuse(f"{path}.buffers", "a list", repr(buffers)[:80])
    entries: list[Any] = []
    for i, entry in enumerate(buffers):
        if entry is None:
            entries.append(None)
            continue
        if not (isinstance(entry, list) and len(entry) == 2 and all(type(v) is int and v >= 0 for v in entry)):
            raise refuse(f"{path}.buffers[{i}]", "[handle index, offset into its allocation]", repr(entry)[:80])
        entries.append([len(places)])
        places.append((entry[0], entry[1]))
    children = node["children"]
    if not isinstance(children, list):
        raise refuse(f"{path}.children", "a list", repr(children)[:80])
    dictionary = node["dictionary"]
    return [node["length"], node["null_count"], node["offset"], entries,
            [frame_nodes(c, f"{path}.children[{k}]", places) for k, c in enumerate(children)],
            None if dictionary is None else frame_nodes(dictionary, f"{path}.dictionary", places)]


def check_before_mapping(header: dict[str, Any], schema: bytes) -> tuple[Any, Shape, dict[str, Any],
                                                                          list[tuple[int, int]]]:
    """Everything that needs no mapping: (type, shape, the chunks as a frame header, each frame's (handle,
    offset)). Raises InvalidArrowError naming what was refused."""
    import socket

    check_export_header(header)
    dtype, shape = schema_of(schema)
    places: list[tuple[int, int]] = []
    nodes = [frame_nodes(node, f"chunks[{k}]", places) for k, node in enumerate(header["chunks"])]
    sizes = header["sizes"]
    for handle, offset in places:
        if handle >= len(sizes) or offset > sizes[handle]:
            raise refuse("chunks", f"buffers inside the {len(sizes)} allocations of the handles",
                         f"handle {handle} at offset {offset}")
    rows = sum(n[0] if type(n[0]) is int else 0 for n in nodes)
    frames_header = {"kind": "column", "columns": [nodes], "rows": rows}
    # the nodes against the allocations' sizes (offsets from the handle to its end), no value read
    check_columns(frames_header, shape, unmapped_frames(places, sizes), SizesOnly(), *_names(places))
    if header["host"] != socket.gethostname():
        raise refuse("host", f"this node ({socket.gethostname()!r}): CUDA IPC works between processes of one node",
                     f"{header['host']!r}, another node")
    _check_exporter(header)
    return dtype, shape, frames_header, places


def unmapped_frames(places: list[tuple[int, int]], sizes: list[int]) -> list[Frame]:
    """Each buffer as a frame of the bytes from its offset to the end of its allocation (address 0: not mapped)."""
    return [(0, sizes[handle] - offset, True) for handle, offset in places]


def exporter_identity() -> dict[str, Any]:
    """What names the exporting process beyond its pid (Linux): its pid namespace and start time, so an importer
    tells an exporter that has exited (its memory freed) from a live one, and a reused pid from the exporter."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as stat:
            started = int(stat.read().rpartition(")")[2].split()[19])
        return {"pid_ns": os.readlink("/proc/self/ns/pid"), "started": started}
    except (OSError, ValueError, IndexError):
        return {}


def _check_exporter(header: dict[str, Any]) -> None:
    """Refuses a handle whose exporting process has exited (or whose pid now names another process), where this
    process sees the exporter's pid namespace (Linux); elsewhere mapping the handle tells."""
    exporter = header.get("exporter")
    if not isinstance(exporter, dict) or exporter.get("pid_ns") is None:
        return
    here = exporter_identity()
    if here.get("pid_ns") != exporter.get("pid_ns"):
        return
    pid = header["pid"]
    try:
        with open(f"/proc/{pid}/stat") as stat:
            started = int(stat.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        started = None
    if started is None or started != exporter.get("started"):
        raise refuse("pid", f"the exporting process {pid} alive (its memory is freed when it exits)",
                     "a process that has exited" if started is None else "another process under that pid")


def check_mapped_sizes(sizes: list[int], mapped: list[int]) -> None:
    """Each mapped allocation's size (cuMemGetAddressRange) against the size the header gave."""
    for i, (said, got) in enumerate(zip(sizes, mapped)):
        if said != got:
            raise refuse(f"handles[{i}]", f"an allocation of {said} bytes (the header's size)", f"{got} bytes mapped")


def check_after_mapping(shape: Shape, frames_header: dict[str, Any], places: list[tuple[int, int]],
                        frames: list[Frame], device_id: int) -> None:
    """The values inside the mapped buffers, on the GPU (one synchronisation)."""
    from .checks import values_for

    check_columns(frames_header, shape, frames, values_for(frames, device_id), *_names(places))


def _names(places: list[tuple[int, int]]) -> tuple[Any, Any]:
    """How refusals name a node (``chunks[k]``) and a buffer (its handle and offset) of a CUDA IPC description."""
    return (lambda i, k: f"chunks[{k}]"), (lambda j: f"handle {places[j][0]} at offset {places[j][1]}")

