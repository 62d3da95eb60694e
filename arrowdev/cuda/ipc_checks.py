"""CUDA IPC descriptions are untrusted too: ``import_ipc`` checks the nodes of ``export_ipc()`` bytes the way received
frames are checked (:mod:`arrowdev.core.node_checks`), before any handle is mapped (issue 30; docs/validation.md,
"CUDA IPC descriptions").

:func:`arrowdev.cuda.ipc.parse_handle` checks the header's own fields (kind, host, device, handles with their sizes,
leases). Then, before a lease is taken or a handle opened: the schema, and every node against its type with each
buffer (handle, offset) seen as a frame of the bytes from its offset to the end of its allocation (sizes by the
layout rules, child lengths, null counts within the length, offsets within the allocation). After mapping: each
mapping's size against the header's (a handle that maps another allocation than the header says is refused), then
the values inside the buffers (offsets, indices, views, run ends, union ids, null counts) on the GPU.
"""

from __future__ import annotations

from typing import Any

from ..core.node_checks import Shape, check_columns, schema_of
from ..core.types import DataType
from ..core.value_checks import Frame, SizesOnly, refuse

__all__ = ["check_after_mapping", "check_before_mapping", "check_mapped_sizes"]

_NODE_KEYS = ("length", "null_count", "offset", "buffers", "children", "dictionary")


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


def check_before_mapping(header: dict[str, Any], schema: bytes) -> tuple[DataType, Shape, dict[str, Any],
                                                                          list[tuple[int, int]], bool]:
    """Everything that needs no mapping, on a header whose own fields ``parse_handle`` checked: (type, shape, the
    chunks as a frame header, each frame's (handle, offset), whether any value inside the buffers is to be checked
    once mapped). Raises InvalidArrowError naming what was refused."""
    dtype, shape = schema_of(bytes(schema))
    places: list[tuple[int, int]] = []
    nodes = [frame_nodes(node, f"chunks[{k}]", places) for k, node in enumerate(header["chunks"])]
    sizes = [h["size"] for h in header["handles"]]
    for handle, offset in places:
        if handle >= len(sizes) or offset >= sizes[handle]:
            raise refuse("chunks", f"buffers inside the {len(sizes)} allocations of the handles",
                         f"handle {handle} at offset {offset}")
    rows = sum(n[0] for n in nodes if type(n[0]) is int)
    frames_header = {"kind": "column", "columns": [nodes], "rows": rows}
    unmapped = [(0, sizes[handle] - offset, True) for handle, offset in places]  # address 0: not mapped, not read
    sizes_only = SizesOnly()
    check_columns(frames_header, shape, unmapped, sizes_only, *_names(places))
    return dtype, shape, frames_header, places, sizes_only.wanted


def check_mapped_sizes(sizes: list[int], mapped: list[int]) -> None:
    """Each mapped allocation's size (``cuMemGetAddressRange``) against the size the header gave."""
    for i, (said, got) in enumerate(zip(sizes, mapped)):
        if said != got:
            raise refuse(f"handles[{i}]", f"an allocation of {said} bytes (the header's size)", f"{got} bytes mapped")


def check_after_mapping(shape: Shape, frames_header: dict[str, Any], places: list[tuple[int, int]],
                        frames: list[Frame], values: Any) -> None:
    """The values inside the mapped buffers (``values``: on the GPU, one synchronisation)."""
    check_columns(frames_header, shape, frames, values, *_names(places))


def _names(places: list[tuple[int, int]]) -> tuple[Any, Any]:
    """How refusals name a node (``chunks[k]``) and a buffer (its handle and offset) of a CUDA IPC description."""
    return (lambda i, k: f"chunks[{k}]"), (lambda j: f"handle {places[j][0]} at offset {places[j][1]}")
