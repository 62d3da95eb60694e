"""The Arrow C Data / C Device Data / C Stream ABI as ctypes structs, and PyCapsule helpers.

For tests that build raw structs (a producer arrowdev has never seen) or read the structs inside
the capsules arrowdev exports. Written from the specification, like capsules/abi.h.

>>> import pyarrow as pa
>>> _, capsule = pa.array([1, None]).__arrow_c_array__()
>>> ArrowArray.from_address(capsule_pointer(capsule, "arrow_array")).null_count
1
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_void_p
from typing import Any

__all__ = [
    "ArrowArray", "ArrowArrayStream", "ArrowDeviceArray", "ArrowDeviceArrayStream", "ArrowSchema",
    "RELEASE_ARRAY", "RELEASE_SCHEMA", "ArrayProducer", "SchemaProducer", "capsule_pointer", "encode_metadata",
    "make_capsule",
]


class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


RELEASE_SCHEMA = ctypes.CFUNCTYPE(None, POINTER(ArrowSchema))
RELEASE_ARRAY = ctypes.CFUNCTYPE(None, POINTER(ArrowArray))

ArrowSchema._fields_ = [
    ("format", c_char_p), ("name", c_char_p), ("metadata", c_char_p), ("flags", c_int64),
    ("n_children", c_int64), ("children", POINTER(POINTER(ArrowSchema))),
    ("dictionary", POINTER(ArrowSchema)), ("release", RELEASE_SCHEMA), ("private_data", c_void_p),
]
ArrowArray._fields_ = [
    ("length", c_int64), ("null_count", c_int64), ("offset", c_int64), ("n_buffers", c_int64),
    ("n_children", c_int64), ("buffers", POINTER(c_void_p)), ("children", POINTER(POINTER(ArrowArray))),
    ("dictionary", POINTER(ArrowArray)), ("release", RELEASE_ARRAY), ("private_data", c_void_p),
]


class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [("array", ArrowArray), ("device_id", c_int64), ("device_type", c_int32),
                ("sync_event", c_void_p), ("reserved", c_int64 * 3)]


class ArrowArrayStream(ctypes.Structure):
    # Callbacks as plain pointers; RELEASE_STREAM calls release.
    _fields_ = [("get_schema", c_void_p), ("get_next", c_void_p), ("get_last_error", c_void_p),
                ("release", c_void_p), ("private_data", c_void_p)]


class ArrowDeviceArrayStream(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("get_schema", c_void_p), ("get_next", c_void_p),
                ("get_last_error", c_void_p), ("release", c_void_p), ("private_data", c_void_p)]


RELEASE_STREAM = ctypes.CFUNCTYPE(None, c_void_p)

_STRUCTS = {"arrow_schema": ArrowSchema, "arrow_array": ArrowArray, "arrow_device_array": ArrowDeviceArray,
            "arrow_array_stream": ArrowArrayStream, "arrow_device_array_stream": ArrowDeviceArrayStream}

_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_void_p, c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_get_pointer = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
# A capsule destructor gets an object whose reference count is already 0: take it as a raw pointer.
_raw_get_name = ctypes.PYFUNCTYPE(c_void_p, c_void_p)(("PyCapsule_GetName", ctypes.pythonapi))
_raw_get_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_void_p)(("PyCapsule_GetPointer", ctypes.pythonapi))

_names: dict[str, ctypes.Array] = {}  # capsule names must outlive their capsules
_kept: dict[int, Any] = {}  # struct address -> the ctypes object a live capsule points into


@ctypes.CFUNCTYPE(None, c_void_p)
def _destructor(capsule: int) -> None:
    """As the PyCapsule interface asks: release the struct if nobody consumed it."""
    name = _raw_get_name(capsule)
    address = _raw_get_pointer(capsule, name)
    struct = _STRUCTS[ctypes.string_at(name).decode()].from_address(address)
    if isinstance(struct, ArrowDeviceArray):
        struct = struct.array
    if isinstance(struct, (ArrowArrayStream, ArrowDeviceArrayStream)):
        if struct.release:
            RELEASE_STREAM(struct.release)(address)
    elif struct.release:
        struct.release(ctypes.pointer(struct))
    _kept.pop(address, None)


def make_capsule(ptr: Any, name: str, *, release_on_free: bool = True) -> Any:
    """A PyCapsule named ``name`` holding ``ptr``: an int address, or a ctypes struct that the capsule
    keeps alive. With ``release_on_free`` (and one of the five Arrow capsule names) the destructor
    calls the struct's release when it is not NULL, as producers' capsules do."""
    address = ptr if isinstance(ptr, int) else ctypes.addressof(ptr)
    if not isinstance(ptr, int):
        _kept[address] = ptr
    if name not in _names:
        _names[name] = ctypes.create_string_buffer(name.encode())
    destructor = ctypes.cast(_destructor, c_void_p).value if release_on_free and name in _STRUCTS else None
    return _new_capsule(address, ctypes.addressof(_names[name]), destructor)


def capsule_pointer(capsule: Any, name: str) -> int:
    """The address a capsule holds (raises ValueError when its name is not ``name``)."""
    return _get_pointer(capsule, name.encode())


class ArrayProducer:
    """A hand-made ArrowArray node (a producer's side) whose release counts its calls.

    ``buffers`` are addresses (0 for NULL) or bytes (copied into memory this object owns);
    ``buffers=None`` with ``n_buffers=k`` gives a NULL buffers pointer, likewise ``children=None``.
    As the specification asks, a node's release releases the children and dictionary it still
    owns, then sets its own release to NULL. A node stays alive until its release has run,
    wherever its struct was moved.
    """

    _alive: set[ArrayProducer] = set()

    def __init__(self, length: int, buffers: Any = (), children: Any = (), *, null_count: int = 0,
                 offset: int = 0, dictionary: ArrayProducer | None = None, n_buffers: int | None = None,
                 n_children: int | None = None) -> None:
        self.releases = 0
        self._memory = [ctypes.create_string_buffer(b, len(b)) if isinstance(b, bytes) else b
                        for b in (buffers or ())]
        addresses = [m if isinstance(m, int) else ctypes.addressof(m) for m in self._memory]
        self.children = list(children or ())
        self.dictionary = dictionary
        self._buffers = (c_void_p * max(len(addresses), 1))(*addresses)
        self._children = (POINTER(ArrowArray) * max(len(self.children), 1))(
            *[ctypes.pointer(c.array) for c in self.children])
        self._release = RELEASE_ARRAY(self._on_release)
        self.array = ArrowArray(
            length=length, null_count=null_count, offset=offset,
            n_buffers=len(addresses) if n_buffers is None else n_buffers,
            n_children=len(self.children) if n_children is None else n_children,
            buffers=None if buffers is None else ctypes.cast(self._buffers, POINTER(c_void_p)),
            children=None if children is None else ctypes.cast(self._children, POINTER(POINTER(ArrowArray))),
            dictionary=None if dictionary is None else ctypes.pointer(dictionary.array),
            release=self._release)
        ArrayProducer._alive.add(self)

    def _on_release(self, node: Any) -> None:
        self.releases += 1
        for child in [*self.children, self.dictionary]:
            if child is not None and child.array.release:
                child.array.release(ctypes.pointer(child.array))
        node.contents.release = RELEASE_ARRAY()
        ArrayProducer._alive.discard(self)

    def capsule(self) -> Any:
        """An ``arrow_array`` capsule over this node's struct (released when collected unconsumed)."""
        return make_capsule(self.array, "arrow_array")

    def device_capsule(self, device_type: int = 1, device_id: int = -1) -> Any:
        """An ``arrow_device_array`` capsule whose ArrowDeviceArray takes this node over (moved)."""
        device = ArrowDeviceArray(array=self.array, device_id=device_id, device_type=device_type)
        self.array.release = RELEASE_ARRAY()
        return make_capsule(device, "arrow_device_array")


def encode_metadata(pairs: Any, lengths: Any = None) -> bytes:
    """The C Data interface's metadata encoding of ``pairs`` ((key, value) bytes); ``lengths``
    replaces the encoded lengths (key, value, key, ...) to make malformed metadata."""
    import struct

    out = [struct.pack("=i", len(pairs))]
    parts = [part for pair in pairs for part in pair]
    for i, part in enumerate(parts):
        out.append(struct.pack("=i", len(part) if lengths is None else lengths[i]) + part)
    return b"".join(out)


class SchemaProducer:
    """A hand-made ArrowSchema node whose release counts its calls, as :class:`ArrayProducer`.

    ``children=None`` with ``n_children=k`` gives a NULL children pointer; a child given as None
    is a NULL child pointer. Its release marks the node released, then releases the children and
    dictionary it still owns (marking first keeps a cyclic tree from recursing forever).
    """

    _alive: set[SchemaProducer] = set()

    def __init__(self, format: bytes | None, children: Any = (), *, name: bytes | None = b"", metadata: bytes | None = None,
                 flags: int = 2, dictionary: SchemaProducer | None = None, n_children: int | None = None) -> None:
        self.releases = 0
        self._strings = [ctypes.create_string_buffer(b, len(b) + 1) if b is not None else None
                         for b in (format, name, metadata)]
        self.children = list(children or ())
        self.dictionary = dictionary
        self._children = (POINTER(ArrowSchema) * max(len(self.children), 1))(
            *[ctypes.pointer(c.schema) if c is not None else None for c in self.children])
        self._release = RELEASE_SCHEMA(self._on_release)
        address = [ctypes.cast(b, c_char_p) if b is not None else None for b in self._strings]
        self.schema = ArrowSchema(
            format=address[0], name=address[1], metadata=address[2], flags=flags,
            n_children=len(self.children) if n_children is None else n_children,
            children=None if children is None else ctypes.cast(self._children, POINTER(POINTER(ArrowSchema))),
            dictionary=None if dictionary is None else ctypes.pointer(dictionary.schema), release=self._release)
        SchemaProducer._alive.add(self)

    def _on_release(self, node: Any) -> None:
        self.releases += 1
        node.contents.release = RELEASE_SCHEMA()
        if ctypes.addressof(node.contents) != ctypes.addressof(self.schema):
            self.schema.release = RELEASE_SCHEMA()
        for child in [*self.children, self.dictionary]:
            if child is not None and child.schema.release:
                child.schema.release(ctypes.pointer(child.schema))
        SchemaProducer._alive.discard(self)

    def capsule(self) -> Any:
        """An ``arrow_schema`` capsule over this node's struct (released when collected unconsumed)."""
        return make_capsule(self.schema, "arrow_schema")
