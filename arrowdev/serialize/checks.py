"""Received frames (pickle, distributed's ``dask`` and ``cuda`` families) are untrusted: the frames' header is
checked here before any field is used, then every node against its type and the frames by
:mod:`arrowdev.core.node_checks` (issue 30; docs/validation.md, "Received frames").

The header (:mod:`arrowdev.serialize.frames` says what it holds): a dict whose kind is ``column`` or ``table``,
device two integers, schema bytes, ``rows`` an integer, ``frames`` the number of frames received, ``columns`` a list
of chunk nodes per column, ``packed`` (where present) a list of places in the received frames.
"""

from __future__ import annotations

from typing import Any

from ..core.node_checks import MAX_COUNT, SEQUENCE, check_columns, check_count, schema_of, values_for
from ..core.value_checks import refuse

__all__ = ["check_columns", "check_header", "schema_of", "values_for"]


def check_header(header: Any, n_frames: int) -> None:
    """The header's own fields, before any is used (the nodes are checked by :func:`check_columns`)."""
    if type(header) is dict and _header_fits(header, n_frames):
        return
    if not isinstance(header, dict):
        raise refuse("header", "a dict", type(header).__name__)
    if header.get("kind") not in ("column", "table"):
        raise refuse("kind", "'column' or 'table'", repr(header.get("kind")))
    device = header.get("device")
    if not (isinstance(device, SEQUENCE) and len(device) == 2 and all(type(v) is int for v in device)):
        raise refuse("device", "[ArrowDeviceType, device id]", repr(device))
    if not isinstance(header.get("schema"), (bytes, bytearray, memoryview)):
        raise refuse("schema", "bytes", type(header.get("schema")).__name__)
    check_count(header.get("rows"), "rows", "a number of rows")
    if type(header.get("frames")) is not int or header.get("frames") != n_frames:
        raise refuse("frames", f"{header.get('frames')!r} frames as the header says", f"{n_frames} frames")
    if not isinstance(header.get("columns"), SEQUENCE):
        raise refuse("columns", "a list of columns", type(header.get("columns")).__name__)
    packed = header.get("packed")
    if packed is not None and not isinstance(packed, SEQUENCE):
        raise refuse("packed", "a list of packed places [frame, offset, size]", repr(packed)[:80])


def _header_fits(header: dict[str, Any], n_frames: int) -> bool:
    """Every field as :func:`check_header` wants it (the commonest case, at once; else it says what is not)."""
    device, rows, packed = header.get("device"), header.get("rows"), header.get("packed")
    return (header.get("kind") in ("column", "table") and type(device) in SEQUENCE and len(device) == 2
            and type(device[0]) is int and type(device[1]) is int and type(rows) is int and 0 <= rows <= MAX_COUNT
            and type(header.get("schema")) in (bytes, bytearray, memoryview) and type(header.get("frames")) is int
            and header["frames"] == n_frames and type(header.get("columns")) in SEQUENCE
            and (packed is None or type(packed) in SEQUENCE))
