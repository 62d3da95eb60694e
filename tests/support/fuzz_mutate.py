"""The frame fuzzer's mutations (tests/support/fuzz_frames.py): of frames (truncate, extend, swap, drop, duplicate,
flip bytes, poke special integers, an odd address) and of the header (node fields, buffer entries, rebase entries,
children, dictionaries, rows, kind, device, frame count, schema, columns, packed places). Each mutation appends
what it did to the case's log."""

from __future__ import annotations

import random
from typing import Any

from .fuzz_wrap import Sent

# integers a header or a frame may be given: edges of every width, and values that are far too large
SPECIAL = [-1, -2, 0, 1, 2, 3, 7, 8, 12, 13, 127, 128, 255, 2**15, 2**16, 2**30, 2**31 - 1, 2**31, 2**32, 2**40,
           2**62, 2**63 - 1, -2**31, -2**63]
NOT_INTS = [None, "1", 1.0, True, [], [0], {"a": 1}, b"\x00"]


def mutate(r: random.Random, sent: Sent, log: list) -> bool:
    """Applies none (one case in ten), one, or a few mutations; whether any changed the sent bytes or header."""
    roll = r.random()
    count = 0 if roll < 0.1 else 1 if roll < 0.75 else r.randint(2, 4)
    for _ in range(count):
        if sent.frames and r.random() < 0.45:
            _frame_mutation(r, sent, log)
        else:
            _header_mutation(r, sent, log)
    return count > 0


# ---- frames ----------------------------------------------------------------------------------------------------


def _frame_mutation(r: random.Random, sent: Sent, log: list) -> None:
    frames = sent.frames
    i = r.randrange(len(frames))
    frame = frames[i]
    what = r.choice(["truncate", "truncate", "extend", "swap", "drop", "duplicate", "flip", "flip", "poke", "poke",
                     "unaligned", "at start"])
    if what == "truncate" and frame:
        frames[i] = frame[:r.choice([0, r.randrange(len(frame)), max(0, len(frame) - r.choice([1, 4, 8]))])]
    elif what == "extend":
        frames[i] = frame + r.randbytes(r.choice([1, 4, 7, 8, 64]))
    elif what == "swap" and len(frames) > 1:
        j = r.randrange(len(frames))
        frames[i], frames[j] = frames[j], frames[i]
    elif what == "drop":
        del frames[i]
        if r.random() < 0.8:
            sent.header["frames"] = len(frames)
    elif what == "duplicate":
        frames.insert(r.randrange(len(frames) + 1), frame)
        if r.random() < 0.8:
            sent.header["frames"] = len(frames)
    elif what == "flip" and frame:
        raw = bytearray(frame)
        for _ in range(r.randint(1, 3)):
            raw[r.randrange(len(raw))] ^= r.randint(1, 255)
        frames[i] = bytes(raw)
    elif what == "poke" and frame:
        frames[i] = _poke(r, frame)
    elif what == "unaligned":
        sent.unaligned.add(i)
    elif what == "at start":
        sent.at_start.add(i)
    else:
        return
    log.append(f"frame {i}: {what}")


def _poke(r: random.Random, frame: bytes) -> bytes:
    """A special integer written at an aligned place of the frame (an offset, an index, a size, a run end)."""
    width = r.choice([w for w in (1, 2, 4, 8) if w <= len(frame)])
    at = r.randrange(len(frame) // width) * width
    value = r.choice(SPECIAL) % (1 << (8 * width))
    raw = bytearray(frame)
    raw[at:at + width] = value.to_bytes(width, "little")
    return bytes(raw)


# ---- the header ------------------------------------------------------------------------------------------------


def _nodes(header: dict) -> list[list]:
    """Every node of the header (a list each, changed in place)."""
    out, pending = [], []
    for column in header.get("columns", []) if isinstance(header.get("columns"), list) else []:
        if isinstance(column, list):
            pending.extend(n for n in column if isinstance(n, list))
    seen = set()  # a mutation may make a node its own descendant (a dictionary copied from an ancestor)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if len(node) == 6:
            out.append(node)
            pending.extend(c for c in (node[4] if isinstance(node[4], list) else []) if isinstance(c, list))
            if isinstance(node[5], list):
                pending.append(node[5])
    return out


def _value(r: random.Random, old: Any) -> Any:
    roll = r.random()
    if roll < 0.15:
        return r.choice(NOT_INTS)
    if roll < 0.55 and type(old) is int:
        return old + r.choice([-1, 1, -8, 8, 64])
    return r.choice(SPECIAL)


def _header_mutation(r: random.Random, sent: Sent, log: list) -> None:
    header = sent.header
    nodes = _nodes(header)
    what = r.choice(["node", "node", "node", "node", "buffer", "buffer", "buffer", "children", "dictionary",
                     "rows", "kind", "device", "frames", "schema", "schema", "columns", "packed"])
    if what in ("node", "buffer", "children", "dictionary") and not nodes:
        what = "rows"
    if what == "node":
        node, field = r.choice(nodes), r.choice([0, 0, 1, 1, 2, 2])
        node[field] = _value(r, node[field])
        what += f"[{field}]={node[field]!r}"
    elif what == "buffer":
        what += _buffer_mutation(r, r.choice(nodes), len(sent.frames))
    elif what == "children":
        what += _children_mutation(r, r.choice(nodes))
    elif what == "dictionary":
        node = r.choice(nodes)
        node[5] = r.choice([None, r.choice(nodes)[:], [0, 0, 0, [], [], None], "x"])
    elif what in ("rows", "frames"):
        header[what] = _value(r, header.get(what))
        what += f"={header[what]!r}"
    elif what == "kind":
        header["kind"] = r.choice(["column", "table", "tables", None])
    elif what == "device":
        header["device"] = r.choice([[2, 0], [13, 0], [3, 0], [99, 0], [1], [1, -1, 0], None, ["1", -1]])
    elif what == "schema":
        what += _schema_mutation(r, header)
    elif what == "columns":
        what += _columns_mutation(r, header)
    elif what == "packed":
        if not header.get("packed"):
            return
        place = r.choice(header["packed"])
        place[r.randrange(3)] = _value(r, place[0])
    log.append(f"header {what}")


def _buffer_mutation(r: random.Random, node: list, n_frames: int) -> str:
    buffers = node[3]
    if not isinstance(buffers, list) or not buffers:
        node[3] = r.choice([None, [None], [[0]]])
        return " (replaced)"
    i = r.randrange(len(buffers))
    entry = buffers[i]
    index = entry[0] if isinstance(entry, list) and entry else 0
    choice = r.choice(["index", "index", "none", "rebase", "rebase", "unrebase", "drop", "add", "garbage"])
    if choice == "index":
        buffers[i] = [r.choice([-1, n_frames, n_frames + 1, r.randrange(max(n_frames, 1)), 1.0, True, "0"])]
    elif choice == "none":
        buffers[i] = None
    elif choice == "rebase":
        old = entry[2] if isinstance(entry, list) and len(entry) == 3 else 0
        buffers[i] = [index, r.choice([4, 4, 8, 8, 2, 3, 0, "4"]), _value(r, old)]
    elif choice == "unrebase":
        buffers[i] = [index]
    elif choice == "drop":
        del buffers[i]
    elif choice == "add":
        buffers.insert(i, [r.randrange(max(n_frames, 1))])
    else:
        buffers[i] = r.choice([[index, 4], [], [index, 4, 0, 0], index, "x"])
    return f"[{i}] {choice}: {buffers[i] if i < len(buffers) else None!r}"


def _children_mutation(r: random.Random, node: list) -> str:
    children = node[4]
    if not isinstance(children, list):
        return ""
    choice = r.choice(["drop", "duplicate", "none", "swap"])
    if choice == "drop" and children:
        del children[r.randrange(len(children))]
    elif choice == "duplicate" and children:
        children.append(children[r.randrange(len(children))][:])
    elif choice == "swap" and len(children) > 1:
        children.reverse()
    elif choice == "none":
        node[4] = None
    return f" {choice}"


def _schema_mutation(r: random.Random, header: dict) -> str:
    """Another type's schema over the same frames (a wider type, another layout), or damaged schema bytes."""
    import pyarrow as pa

    from .samples import CASES

    choice = r.choice(["other type", "other type", "other type", "flip", "truncate"])
    data = bytes(header["schema"]) if isinstance(header.get("schema"), (bytes, bytearray)) else b""
    if choice == "other type":
        other = CASES[r.choice(sorted(CASES))].type
        if header.get("kind") == "table":  # the table's struct type with its first column's type replaced
            try:
                old = pa.ipc.read_schema(pa.py_buffer(data)).field(0).type
                other = pa.struct([pa.field(old[0].name, other), *[old[k] for k in range(1, old.num_fields)]])
            except Exception:  # the schema is damaged already: the other type alone
                pass
        header["schema"] = pa.schema([pa.field("", other)]).serialize().to_pybytes()
        return f" {other}"
    if choice == "flip" and data:
        raw = bytearray(data)
        raw[r.randrange(len(raw))] ^= r.randint(1, 255)
        header["schema"] = bytes(raw)
    else:
        header["schema"] = data[:r.randrange(len(data) + 1)]
    return f" {choice}"


def _columns_mutation(r: random.Random, header: dict) -> str:
    columns = header.get("columns")
    if not isinstance(columns, list) or not columns:
        return ""
    column = r.choice(columns)
    choice = r.choice(["duplicate chunk", "drop chunk", "reverse chunks", "swap columns", "add column"])
    if choice == "duplicate chunk" and column:
        column.append(column[r.randrange(len(column))][:])
    elif choice == "drop chunk" and column:
        del column[r.randrange(len(column))]
    elif choice == "reverse chunks":
        column.reverse()
    elif choice == "swap columns":
        columns.reverse()
    elif choice == "add column":
        columns.append(column[:])
    return f" {choice}"
