"""A fuzzer of arrowdev's import: malformed and valid Arrow C structs, each case in a child process.

A case is a seed. From it, :func:`run_case` builds a column of a random type with PyArrow, copies
the schema and array trees PyArrow exported into structs of its own (:class:`SchemaNode`,
:class:`ArrayNode`: the same buffers, one counted release per node), breaks a few of them
(:data:`SCHEMA_MUTATIONS`, :data:`ARRAY_MUTATIONS`, device fields, stream callbacks), hands them to
arrowdev through one of the protocols, and uses whatever arrowdev accepted (full validation, the
values, exports, slices). Then it checks that every producer node was released exactly as often
as the producer's own release rules say: once for every node still reachable through live
nodes, never for the others.

Only what a consumer can detect is broken: pointers, counts, formats, flags, metadata lengths,
device fields. Nothing lies about a buffer's size (a longer length, a wider format over the same
bytes): no consumer can catch that (docs/validation.md), and such a case would crash whatever
reads it.

:mod:`fuzz_run` runs many seeds in child processes. ``python3 -m tests.support.fuzz_arrow SEED`` (from the
repository's root) reruns one case here, in this process, and says what it did (``ARROWDEV_FUZZ_VERBOSE=1``:
before it runs).
"""

from __future__ import annotations

import ctypes
import gc
import os
import random
import sys
from ctypes import POINTER, c_int, c_void_p
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from .cabi import (RELEASE_ARRAY, RELEASE_SCHEMA, ArrowArray, ArrowArrayStream, ArrowDeviceArray,
                  ArrowDeviceArrayStream, ArrowSchema, capsule_pointer, encode_metadata, make_capsule)

# ---- the producer's side: nodes with counted releases ------------------------------------------


class _Node:
    """What both node kinds share: a release that counts its calls, marks the node released
    first (so a cyclic tree cannot recurse forever), then releases the children and dictionary
    the node still owns (``kids``, as the producer sees them: None for one it lost)."""

    struct: Any
    releases: int
    kids: list
    dictionary: Any

    def _on_release(self, pointer: Any) -> None:
        self.releases += 1
        pointer.contents.release = type(self.struct.release)()
        self.struct.release = type(self.struct.release)()
        for kid in [*self.kids, self.dictionary]:
            if kid is not None and kid.struct.release:
                kid.struct.release(ctypes.pointer(kid.struct))

    def walk(self) -> list:
        """Every node of the tree as the producer sees it (each once, cycles included)."""
        seen: dict[int, _Node] = {}
        pending = [self]
        while pending:
            node = pending.pop()
            if node is not None and id(node) not in seen:
                seen[id(node)] = node
                pending.extend([*node.kids, node.dictionary])
        return list(seen.values())

    def expected_releases(self) -> dict[int, int]:
        """Per node (by id), the releases the producer's rules give: 1 for every node reachable
        from the top through nodes not released before the case ran, else 0."""
        expected = {id(n): 0 for n in self.walk()}
        pending = [self] if not self.released_before else []
        while pending:
            node = pending.pop()
            if expected[id(node)] == 0:
                expected[id(node)] = 1
                pending.extend(k for k in [*node.kids, node.dictionary] if k is not None and not k.released_before)
        return expected

    released_before = False


class SchemaNode(_Node):
    def __init__(self, source: ArrowSchema) -> None:
        self.releases = 0
        self._strings = [ctypes.create_string_buffer(s) if s is not None else None for s in (source.format, source.name)]
        self.metadata = _metadata_bytes(source.metadata)
        self._metadata = ctypes.create_string_buffer(self.metadata, len(self.metadata) + 1) if self.metadata else None
        n = source.n_children
        self.kids = [SchemaNode(source.children[i].contents) for i in range(n)]
        self.dictionary = SchemaNode(source.dictionary.contents) if source.dictionary else None
        self._pointers = (POINTER(ArrowSchema) * (n + 2))(*[ctypes.pointer(k.struct) for k in self.kids])
        self._release = RELEASE_SCHEMA(self._on_release)
        self.struct = ArrowSchema(
            format=ctypes.cast(self._strings[0], ctypes.c_char_p), flags=source.flags, n_children=n,
            name=ctypes.cast(self._strings[1], ctypes.c_char_p) if self._strings[1] is not None else None,
            metadata=ctypes.cast(self._metadata, ctypes.c_char_p) if self._metadata is not None else None,
            children=ctypes.cast(self._pointers, POINTER(POINTER(ArrowSchema))),
            dictionary=ctypes.pointer(self.dictionary.struct) if self.dictionary else None, release=self._release)

    def set_string(self, field_name: str, value: bytes | None) -> None:
        buffer = ctypes.create_string_buffer(value, len(value) + 1) if value is not None else None
        self._strings.append(buffer)
        setattr(self.struct, field_name, ctypes.cast(buffer, ctypes.c_char_p) if buffer is not None else None)


def _metadata_bytes(address: Any) -> bytes | None:
    if not address:
        return None
    raw = ctypes.cast(address, c_void_p).value
    n = ctypes.c_int32.from_address(raw).value
    pos = 4
    for _ in range(2 * n):
        pos += 4 + ctypes.c_int32.from_address(raw + pos).value
    return ctypes.string_at(raw, pos)


class ArrayNode(_Node):
    def __init__(self, source: ArrowArray) -> None:
        self.releases = 0
        n, k = source.n_children, source.n_buffers
        self.kids = [ArrayNode(source.children[i].contents) for i in range(n)]
        self.dictionary = ArrayNode(source.dictionary.contents) if source.dictionary else None
        self.rows = source.offset + source.length  # the rows behind the buffers
        # one spare NULL slot after the buffers and the children: a count raised by one reads it
        self._buffers = (c_void_p * (k + 2))(*[source.buffers[i] for i in range(k)])
        self._pointers = (POINTER(ArrowArray) * (n + 2))(*[ctypes.pointer(kid.struct) for kid in self.kids])
        self._release = RELEASE_ARRAY(self._on_release)
        self.struct = ArrowArray(
            length=source.length, null_count=source.null_count, offset=source.offset, n_buffers=k, n_children=n,
            buffers=ctypes.cast(self._buffers, POINTER(c_void_p)),
            children=ctypes.cast(self._pointers, POINTER(POINTER(ArrowArray))),
            dictionary=ctypes.pointer(self.dictionary.struct) if self.dictionary else None, release=self._release)


def _nodes_with_paths(top: _Node) -> list[tuple[_Node, list[_Node]]]:
    """The nodes of a tree (before mutations: a real tree), each with its ancestors."""
    out, pending = [], [(top, [])]
    while pending:
        node, ancestors = pending.pop()
        out.append((node, ancestors))
        for kid in [*node.kids, node.dictionary]:
            if kid is not None:
                pending.append((kid, [*ancestors, node]))
    return out


# ---- data: random PyArrow arrays ------------------------------------------------------------


def _strings(r: random.Random) -> str:
    return r.choice(["", "a", "bc", "héllo", "x" * 13, "long string " * r.randint(1, 3)])


def _sparse(r: random.Random, n: int) -> pa.Array:
    types = pa.array([r.randint(0, 1) for _ in range(n)], pa.int8())
    return pa.UnionArray.from_sparse(types, [pa.array(range(n)), pa.array([_strings(r) for _ in range(n)])])


def _dense(r: random.Random, n: int) -> pa.Array:
    types = [r.randint(0, 1) for _ in range(n)]
    offsets = [types[:i].count(t) for i, t in enumerate(types)]
    return pa.UnionArray.from_dense(pa.array(types, pa.int8()), pa.array(offsets, pa.int32()),
                                    [pa.array(range(types.count(0))), pa.array(["s"] * types.count(1))])


# type -> a maker of one value (None for the types built another way)
VALUES: list[tuple[Any, Callable[[random.Random], Any]]] = [
    (pa.int32(), lambda r: r.randint(-9, 9)), (pa.int64(), lambda r: r.randint(-2**40, 2**40)),
    (pa.uint8(), lambda r: r.randint(0, 255)), (pa.bool_(), lambda r: r.random() < 0.5),
    (pa.float64(), lambda r: r.random()), (pa.float16(), lambda r: None),
    (pa.string(), _strings), (pa.large_string(), _strings), (pa.binary(), lambda r: _strings(r).encode()),
    (pa.string_view(), _strings), (pa.binary_view(), lambda r: _strings(r).encode()),
    (pa.binary(3), lambda r: b"abc"), (pa.decimal128(9, 2), lambda r: Decimal(r.randint(0, 9999)) / 100),
    (pa.date32(), lambda r: r.randint(0, 20000)), (pa.timestamp("us", "UTC"), lambda r: r.randint(0, 2**40)),
    (pa.duration("ns"), lambda r: r.randint(0, 2**40)), (pa.time32("s"), lambda r: r.randint(0, 86399)),
    (pa.month_day_nano_interval(), lambda r: (1, 2, r.randint(0, 9))), (pa.null(), lambda r: None),
    (pa.list_(pa.int32()), lambda r: [r.randint(0, 9) for _ in range(r.randint(0, 3))]),
    (pa.large_list(pa.string()), lambda r: [_strings(r) for _ in range(r.randint(0, 2))]),
    (pa.list_view(pa.int16()), lambda r: [r.randint(0, 9) for _ in range(r.randint(0, 3))]),
    (pa.list_(pa.int16(), 2), lambda r: [r.randint(0, 9), r.randint(0, 9)]),
    (pa.struct([("a", pa.int32()), ("b", pa.string())]), lambda r: {"a": r.randint(0, 9), "b": _strings(r)}),
    (pa.struct([("l", pa.list_(pa.struct([("v", pa.string_view())])))]), lambda r: {"l": [{"v": _strings(r)}]}),
    (pa.map_(pa.string(), pa.int32()), lambda r: [(_strings(r), r.randint(0, 9)) for _ in range(r.randint(0, 2))]),
    (pa.dictionary(pa.int8(), pa.string()), lambda r: r.choice(["a", "b", "c"])),
    (pa.dictionary(pa.int32(), pa.int64()), lambda r: r.randint(0, 3)),
    (pa.run_end_encoded(pa.int32(), pa.string()), lambda r: r.choice(["a", "b"])),
    (pa.sparse_union([pa.field("0", pa.int64()), pa.field("1", pa.string())]), None),
    (pa.dense_union([pa.field("0", pa.int64()), pa.field("1", pa.string())]), None),
]


def make_data(r: random.Random) -> pa.Array:
    """A random array (maybe sliced, maybe with nulls) of a random type from VALUES."""
    dtype, value = r.choice(VALUES)
    n = r.randint(0, 6)
    if pa.types.is_union(dtype) and dtype.mode == "sparse":
        data = _sparse(r, n)
    elif pa.types.is_union(dtype):
        data = _dense(r, n)
    elif pa.types.is_run_end_encoded(dtype):
        data = pc.run_end_encode(pa.array([value(r) for _ in range(n)], pa.string()))
    elif dtype == pa.float16():
        import numpy as np

        data = pa.array(np.arange(n, dtype=np.float16))
    else:
        nulls = r.random() < 0.5
        data = pa.array([None if nulls and r.random() < 0.3 else value(r) for _ in range(n)], dtype)
    if n > 1 and r.random() < 0.3:
        start = r.randint(0, n - 1)
        data = data.slice(start, r.randint(0, n - start))
    return data


# ---- mutations ------------------------------------------------------------------------------

# Formats that no parser may accept, and swaps between formats of one layout and one width (a
# consumer reads the same bytes differently, but within the buffers).
BAD_FORMATS = [b"", b"+", b"w:", b"w:-1", b"d:1", b"d:0,2", b"d:9,2,7", b"+w:", b"+us:128", b"+ud:1,", b"tsX:",
               b"t", b"ii", b"+l2", b"vx", b"tDx", b"+r2", b"\xc3(", b"\xff", b"tss", b"+ud:x", b"d:9,2,", b"q"]
SAME_WIDTH = [[b"i", b"I", b"f", b"tdD", b"tts", b"tiM"], [b"l", b"L", b"g", b"tdm", b"ttu", b"tDs", b"tss:", b"tiD"],
              [b"u", b"z"], [b"U", b"Z"], [b"vu", b"vz"], [b"c", b"C"], [b"s", b"S", b"e"]]


def _break_child(r: random.Random, node: Any, kids: list, what: str, release_type: Any) -> None:
    """One child of a schema or array node made NULL ("child") or released before import ("released_child")."""
    i = r.choice(kids)
    if what == "child":
        node._pointers[i] = None
        node.kids[i] = None
    else:
        node.kids[i].struct.release = release_type()
        node.kids[i].released_before = True


def _schema_mutation(r: random.Random, node: SchemaNode, ancestors: list, log: list) -> None:
    s = node.struct
    what = r.choice(["format", "format", "swap", "name", "metadata", "flags", "n_children", "children", "child",
                     "released_child", "dictionary", "share", "cycle", "released"])
    kids = [i for i, k in enumerate(node.kids) if k is not None]
    if what == "format":
        node.set_string("format", r.choice(BAD_FORMATS + [None]))
    elif what == "swap":
        group = next((g for g in SAME_WIDTH if s.format in g), None)
        if group is None:
            return
        node.set_string("format", r.choice(group))
    elif what == "name":
        node.set_string("name", r.choice([b"\xff\xfe", b"caf\xe9", None, "名前".encode(), b"ok"]))
    elif what == "metadata":
        pairs = [(b"key", b"value"), (b"k2", b"\x00\xff")][: r.randint(0, 2)]
        lengths = None if r.random() < 0.4 else [r.choice([-1, -2**31, -7, len(p)]) for pair in pairs for p in pair]
        raw = encode_metadata(pairs, lengths) if r.random() < 0.9 else b"\xff\xff\xff\xff"  # count -1
        node._metadata = ctypes.create_string_buffer(raw, len(raw) + 1)
        s.metadata = ctypes.cast(node._metadata, ctypes.c_char_p)
        what += f"({raw.hex()})"
    elif what == "flags":
        s.flags = r.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 2**40])
    elif what == "n_children":
        s.n_children = max(-1, s.n_children + r.choice([-1, 1])) if r.random() < 0.9 else -5
    elif what == "children":
        if s.n_children == 0:
            return
        s.children = None
    elif what in ("child", "released_child") and kids:
        _break_child(r, node, kids, what, RELEASE_SCHEMA)
    elif what == "dictionary":
        if node.dictionary is not None:
            s.dictionary = None
            node.dictionary = None
        else:
            source = pa.int32().__arrow_c_schema__()
            extra = SchemaNode(ArrowSchema.from_address(capsule_pointer(source, "arrow_schema")))
            node.dictionary = extra
            s.dictionary = ctypes.pointer(extra.struct)
    elif what == "share" and len(kids) >= 2:
        i, j = r.sample(kids, 2)
        node._pointers[j] = ctypes.pointer(node.kids[i].struct)
        node.kids[j] = node.kids[i]
    elif what == "cycle" and kids:
        i = r.choice(kids)
        target = r.choice([node, *ancestors])
        node._pointers[i] = ctypes.pointer(target.struct)
        node.kids[i] = target
    elif what == "released":
        s.release = RELEASE_SCHEMA()
        node.released_before = True
    else:
        return
    log.append(f"schema.{what}")


def _array_mutation(r: random.Random, node: ArrayNode, ancestors: list, log: list) -> None:
    a = node.struct
    what = r.choice(["length", "shorter", "offset", "shift", "null_count", "n_buffers", "buffers", "buffer",
                     "buffer", "n_children", "children", "child", "released_child", "dictionary", "share", "cycle",
                     "released", "overflow"])
    kids = [i for i, k in enumerate(node.kids) if k is not None]
    if what in ("shorter", "shift") and (a.length > node.rows or a.offset >= 2**62):
        return  # after "overflow": it would leave rows past the buffers that nothing betrays (undetectable)
    if what == "length":
        a.length = r.choice([-1, -2**63])
    elif what == "shorter" and a.length > 0:
        a.length = r.randint(0, a.length - 1)
    elif what == "offset":
        a.offset = -1
    elif what == "shift" and a.length > 0:
        k = r.randint(1, a.length)
        a.offset += k
        a.length -= k
    elif what == "null_count":
        a.null_count = r.choice([-2, -1, 0, a.length + 1, 2**62])
    elif what == "n_buffers":
        a.n_buffers = max(-1, a.n_buffers + r.choice([-1, 1]))
    elif what == "buffers" and a.n_buffers > 0:
        a.buffers = None
    elif what == "buffer" and a.n_buffers > 0:
        node._buffers[r.randrange(a.n_buffers)] = None
    elif what == "n_children":
        a.n_children = max(-1, a.n_children + r.choice([-1, 1]))
    elif what == "children" and a.n_children > 0:
        a.children = None
    elif what in ("child", "released_child") and kids:
        _break_child(r, node, kids, what, RELEASE_ARRAY)
    elif what == "dictionary":
        if node.dictionary is not None:
            a.dictionary = None
            node.dictionary = None
        else:
            _, capsule = pa.array([1, 2], pa.int32()).__arrow_c_array__()
            extra = ArrayNode(ArrowArray.from_address(capsule_pointer(capsule, "arrow_array")))
            extra.keep = capsule
            node.dictionary = extra
            a.dictionary = ctypes.pointer(extra.struct)
    elif what == "share" and len(kids) >= 2:
        i, j = r.sample(kids, 2)
        node._pointers[j] = ctypes.pointer(node.kids[i].struct)
        node.kids[j] = node.kids[i]
    elif what == "cycle" and kids:
        target = r.choice([node, *ancestors])
        i = r.choice(kids)
        node._pointers[i] = ctypes.pointer(target.struct)
        node.kids[i] = target
    elif what == "released":
        a.release = RELEASE_ARRAY()
        node.released_before = True
    elif what == "overflow":
        a.offset, a.length = 2**62, 2**62
    else:
        return
    log.append(f"array.{what}")


# ---- protocols: how the structs reach arrowdev ---------------------------------------------

_GET_SCHEMA = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(ArrowSchema))
_GET_NEXT = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(ArrowArray))
_GET_NEXT_DEVICE = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(ArrowDeviceArray))
_GET_LAST_ERROR = ctypes.CFUNCTYPE(c_void_p, c_void_p)
_RELEASE_STREAM = ctypes.CFUNCTYPE(None, c_void_p)
_MESSAGE = ctypes.create_string_buffer(b"the producer failed")


class Stream:
    """A stream (CPU or device) over one schema and arrays, each moved out when asked for; its
    release releases what was never moved out. ``fail_at``: get_next returns EIO at that call."""

    def __init__(self, schema: SchemaNode, arrays: list[ArrowDeviceArray], device: bool, fail_at: int | None,
                 device_type: int) -> None:
        self.schema, self.arrays, self.fail_at, self.calls, self.releases = schema, list(arrays), fail_at, 0, 0
        self.schema_given = False
        get_next = _GET_NEXT_DEVICE(self._get_next_device) if device else _GET_NEXT(self._get_next)
        self._callbacks = [_GET_SCHEMA(self._get_schema), get_next, _GET_LAST_ERROR(lambda _: ctypes.addressof(_MESSAGE)),
                           _RELEASE_STREAM(self._release)]
        pointers = [ctypes.cast(f, c_void_p).value for f in self._callbacks]
        self.struct = ArrowDeviceArrayStream(device_type, *pointers, None) if device else ArrowArrayStream(*pointers, None)
        self.name = "arrow_device_array_stream" if device else "arrow_array_stream"

    def _get_schema(self, _, out):
        if self.schema_given:
            return 22  # EINVAL: moved out already
        self.schema_given = True
        ctypes.memmove(out, ctypes.addressof(self.schema.struct), ctypes.sizeof(ArrowSchema))
        self.schema.struct.release = RELEASE_SCHEMA()  # moved: the release now comes through the copy
        return 0

    def _next(self, out, size, device: bool) -> int:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            return 5  # EIO
        ctypes.memset(out, 0, size)
        if self.arrays:
            moved = self.arrays.pop(0)
            ctypes.memmove(out, ctypes.addressof(moved if device else moved.array), size)
            moved.array.release = RELEASE_ARRAY()
        return 0

    def _get_next(self, _, out):
        return self._next(out, ctypes.sizeof(ArrowArray), False)

    def _get_next_device(self, _, out):
        return self._next(out, ctypes.sizeof(ArrowDeviceArray), True)

    def _release(self, address):
        self.releases += 1
        for moved in self.arrays:
            if moved.array.release:
                moved.array.release(ctypes.pointer(moved.array))
        if self.schema.struct.release and not self.schema_given:
            self.schema.struct.release(ctypes.pointer(self.schema.struct))
        type(self.struct).from_address(address).release = None

    def capsule(self) -> Any:
        return make_capsule(self.struct, self.name)


@dataclass
class Case:
    seed: int
    log: list = field(default_factory=list)


def _device_array(r: random.Random, top: ArrayNode, case: Case) -> ArrowDeviceArray:
    """The top node as an ArrowDeviceArray (the struct moved), its device fields maybe broken."""
    device_type, device_id, event = 1, -1, None
    roll = r.random()
    if roll < 0.1:
        device_type = r.choice([0, 5, 6, 17, 99, -1, 2**31 - 1])
    elif roll < 0.15:
        device_type, device_id = r.choice([(2, -1), (1, -9), (10, -3)])
    elif roll < 0.2:
        event = r.choice([0, 0xDEADBEEF])  # readable memory holding a null or a bogus cudaEvent_t
        case.event = ctypes.c_void_p(event)
        event = ctypes.addressof(case.event)
    if device_type != 1 or device_id != -1 or event is not None:
        case.log.append(f"device({device_type}, {device_id}, event={'set' if event else None})")
    out = ArrowDeviceArray(array=top.struct, device_id=device_id, device_type=device_type, sync_event=event)
    top.struct.release = RELEASE_ARRAY()  # moved into the device struct
    return out


def _import(r: random.Random, schema: SchemaNode, top: ArrayNode, case: Case) -> Any:
    """Hands the structs to arrowdev through a random protocol; the column, or raises."""
    import arrowdev as ad

    protocol = r.choice(["array", "device", "bare", "stream", "device_stream", "producer"])
    case.log.append(protocol)
    case.keep = []
    if protocol == "array":
        array = make_capsule(top.struct, "arrow_array")
        return ad.column((schema_capsule(schema), array))
    device = _device_array(r, top, case)
    case.keep.append(device)
    if protocol == "device":
        return ad.column((schema_capsule(schema), make_capsule(device, "arrow_device_array")))
    if protocol == "bare":
        return ad.column(make_capsule(device, "arrow_device_array"), schema=schema_capsule(schema))
    if protocol == "producer":
        class Producer:
            def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
                return schema_capsule(schema), make_capsule(device, "arrow_device_array")

        return ad.column(Producer())
    fail_at = r.choice([None, None, 1, 2])
    stream_type = device.device_type if r.random() < 0.9 else 2
    stream = Stream(schema, [device], protocol == "device_stream", fail_at, stream_type)
    if r.random() < 0.05:
        stream.struct.get_next = None
        case.log.append("get_next=NULL")
    case.stream = stream
    case.log.append(f"fail_at={fail_at}" if fail_at else "")
    return ad.column(stream.capsule())


def schema_capsule(schema: SchemaNode) -> Any:
    return make_capsule(schema.struct, "arrow_schema")


def _use(col: Any, data: pa.Array, mutated: bool) -> str:
    """Uses an accepted column as a user would; what happened."""
    import arrowdev as ad

    len(col), str(col.type), col.null_count, col.device
    try:
        col.validate(full=True)
    except ad.InvalidArrowError:
        return "accepted, refused by validate(full=True)"
    if not col.device.is_cpu_readable:
        return "accepted (not CPU memory)"
    col.buffers
    as_pyarrow = col.to_pyarrow()
    as_pyarrow.to_pylist()  # PyArrow's converter: nanoarrow's is another helper's business (issue 12 E)
    again = ad.column(col)
    sliced = col.slice(len(col) // 2)
    pa.chunked_array([pa.array(sliced)]) if len(col) else None
    if not mutated and not as_pyarrow.equals(pa.chunked_array([data])):
        return "WRONG: valid data changed on the way"
    del again
    return "accepted"


def run_case(seed: int) -> tuple[str, Case]:
    """Runs one case in this process; (outcome, case). The outcome starts with "refused",
    "accepted", "error" (another Python exception after import), "WRONG" or "UNBALANCED"."""
    import arrowdev as ad

    r = random.Random(seed)
    case = Case(seed)
    data = make_data(r)
    case.log.append(str(data.type))
    pa_schema, pa_array = data.__arrow_c_array__()
    schema = SchemaNode(ArrowSchema.from_address(capsule_pointer(pa_schema, "arrow_schema")))
    top = ArrayNode(ArrowArray.from_address(capsule_pointer(pa_array, "arrow_array")))
    schema_nodes, array_nodes = _nodes_with_paths(schema), _nodes_with_paths(top)
    for _ in range(r.choice([0, 1, 1, 1, 2, 3])):
        if r.random() < 0.5:
            _schema_mutation(r, *r.choice(schema_nodes), case.log)
        else:
            _array_mutation(r, *r.choice(array_nodes), case.log)
    mutated = any(entry.startswith(("schema.", "array.", "device", "get_next")) for entry in case.log)
    all_nodes = schema.walk() + top.walk()
    expected = {**schema.expected_releases(), **top.expected_releases()}
    gc.collect()  # garbage of whatever ran before (another test in this process) goes now, not during the case
    before = ad.debug.ownership_stats()["live_containers"]
    if os.environ.get("ARROWDEV_FUZZ_VERBOSE"):  # the story before the end, for a case that crashes
        print(" | ".join(case.log), file=sys.stderr, flush=True)
    try:
        col = _import(r, schema, top, case)
    except ad.InvalidArrowError as e:
        outcome = f"refused: {str(e)[:160]}"
    except (TypeError, ValueError) as e:
        outcome = f"refused ({type(e).__name__}): {str(e)[:160]}"
    except Exception as e:  # not what a caller catches (ValueError, TypeError): counted apart
        outcome = f"error at import ({type(e).__name__}): {str(e)[:160]}"
    else:
        mutated = mutated or any(entry.startswith(("device", "get_next")) for entry in case.log)
        try:
            outcome = _use(col, data, mutated)
        except Exception as e:  # a clear Python error after import: counted apart, not a crash
            outcome = f"error after import ({type(e).__name__}): {str(e)[:160]}"
        del col
    case.__dict__.pop("keep", None)
    case.__dict__.pop("stream", None)
    gc.collect()
    after = ad.debug.ownership_stats()["live_containers"]
    wrong = [f"{type(n).__name__}:{n.releases}!={expected[id(n)]}" for n in all_nodes if n.releases != expected[id(n)]]
    case.nodes = len(all_nodes)
    if wrong or after != before:
        outcome = f"UNBALANCED {wrong[:4]} live containers {before}->{after}; was: {outcome}"
    del pa_schema, pa_array
    return outcome, case


if __name__ == "__main__":  # python3 -m tests.support.fuzz_arrow SEED: one case, here, with its story
    outcome, case = run_case(int(sys.argv[1]))
    print(" | ".join(entry for entry in case.log if entry))
    print(outcome)
