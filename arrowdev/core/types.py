"""Arrow data types and devices as arrowdev shows them.

A :class:`DataType` wraps a nanoarrow ``CSchema`` (nanoarrow parses and validates format
strings; arrowdev does not re-implement that). A :class:`Device` names where buffers live.

>>> import pyarrow as pa
>>> import arrowdev as ad
>>> t = ad.DataType.from_arrow(pa.list_(pa.string()))
>>> t  # printed as PyArrow prints types
list<item: string>
>>> t.format, t.id
('+l', 'list')
>>> t == pa.list_(pa.string()), pa.types.is_list(t)  # equal to the PyArrow type it stands for
(True, True)
>>> ad.Device.cpu()
Device(type='cpu', id=-1)
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

import nanoarrow as na
from nanoarrow.c_schema import c_schema_view

from .. import _capsules
from ..errors import InvalidArrowError

__all__ = ["DataType", "Device", "TypeId"]

# ArrowDeviceType codes from the C Device Data interface.
_DEVICE_NAMES = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
    10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu",
    16: "hexagon",
}
_DEVICE_CODES = {name: code for code, name in _DEVICE_NAMES.items()}
# Memory the CPU may read directly (after waiting on the sync event).
_CPU_READABLE = {"cpu", "cuda_host", "rocm_host"}


class Device(NamedTuple):
    """Where an array's buffers live: a device type name and a device id (-1 for the CPU)."""

    type: str
    id: int

    @classmethod
    def cpu(cls) -> Device:
        return cls("cpu", -1)

    @classmethod
    def from_code(cls, code: int, device_id: int) -> Device:
        try:
            return cls(_DEVICE_NAMES[code], device_id)
        except KeyError:
            raise InvalidArrowError(f"unknown ArrowDeviceType {code}") from None

    @property
    def code(self) -> int:
        """The ArrowDeviceType code."""
        return _DEVICE_CODES[self.type]

    @property
    def is_cpu_readable(self) -> bool:
        """True where the CPU can read the memory in place (CPU and pinned host memory)."""
        return self.type in _CPU_READABLE


# PyArrow's type ids (``pyarrow.lib.Type_*``, Arrow C++'s ``arrow::Type::type``), by nanoarrow's type
# names, in id order; tests/test_conventions.py checks them against ``pyarrow.types.TypesEnum``.
_PYARROW_TYPE_IDS = {name: i for i, name in enumerate((
    "na", "bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "half_float",
    "float", "double", "string", "binary", "fixed_size_binary", "date32", "date64", "timestamp", "time32",
    "time64", "interval_months", "interval_day_time", "decimal128", "decimal256", "list", "struct",
    "sparse_union", "dense_union", "dictionary", "map", "extension", "fixed_size_list", "duration",
    "large_string", "large_binary", "large_list", "interval_month_day_nano", "run_end_encoded", "string_view",
    "binary_view", "list_view", "large_list_view", "decimal32", "decimal64"))}


class TypeId(int):
    """A type's id: PyArrow's integer id (``pa.float64().id``, what ``pyarrow.types.is_*`` test), shown
    and compared as its name too (``'double'``).

    It equals both (``t.id == 12`` and ``t.id == "double"``) but hashes as the integer, as PyArrow's
    id does, so sets and dicts of PyArrow ids find it; a set or dict of names needs ``str(t.id)``.
    """

    _name: str

    def __new__(cls, name: str) -> TypeId:
        self = super().__new__(cls, _PYARROW_TYPE_IDS.get(name, -1))
        self._name = name
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self._name == other
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = int.__hash__

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return repr(self._name)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return TypeId, (self._name,)


class DataType:
    """An Arrow data type (with the field name, nullability and metadata it was given).

    Equality compares types the way PyArrow does: format strings, child names and child types,
    and dictionaries; not the top-level name, nullability or metadata. A DataType equals the
    PyArrow type it stands for (``col.type == pa.float64()``, either way round), and any other
    object with ``__arrow_c_schema__`` of that type, or a name PyArrow's ``==`` takes (``"float64"``);
    and ``pyarrow.types.is_*`` accept it (they read :attr:`id`).
    """

    __slots__ = ("_c", "_address", "__dict__")

    def __init__(self, c_schema: Any) -> None:
        self._c = c_schema
        self._address: int = c_schema._addr()  # of the ArrowSchema (valid while this type lives)

    @classmethod
    def from_arrow(cls, obj: Any) -> DataType:
        """A DataType from anything with ``__arrow_c_schema__`` or an ``arrow_schema`` capsule.

        The producer's schema tree is checked in C before anything reads it, then copied, and the
        copy is parsed at every node (see :func:`type_of_schema`); a malformed one raises
        :class:`~arrowdev.InvalidArrowError` naming the node."""
        if isinstance(obj, DataType):
            return obj
        if _capsules.capsule_name(obj) is not None:
            return type_of_schema(obj)
        method = getattr(obj, "__arrow_c_schema__", None)
        if method is None:
            raise TypeError(f"expected an Arrow schema (__arrow_c_schema__), got {type(obj).__name__}")
        return type_of_schema(method())

    def __arrow_c_schema__(self) -> Any:
        return _capsules.export_schema(self)

    @cached_property
    def _metadata(self) -> Any:
        """The schema's metadata as nanoarrow reads it (None when there is none)."""
        return self._c.metadata

    @property
    def metadata(self) -> Any:
        """The schema's metadata as nanoarrow reads it (None when there is none)."""
        return self._metadata

    @property
    def c_schema(self) -> Any:
        """The nanoarrow ``CSchema`` of this type (arrowdev's own copy of the producer's schema)."""
        return self._c

    @cached_property
    def _view(self) -> Any:
        try:
            return c_schema_view(self._c)
        except (ValueError, RuntimeError) as e:  # nanoarrow's NanoarrowException is a RuntimeError
            raise InvalidArrowError(f"malformed Arrow schema {self._c.format!r}: {e}") from e

    @property
    def format(self) -> str:
        """The Arrow C format string, e.g. ``'u'`` for string."""
        format: str = self._c.format
        return format

    @property
    def name(self) -> str | None:
        """The field name the producer gave (``None`` or ``''`` when unnamed)."""
        name: str | None = self._c.name
        return name

    @property
    def nullable(self) -> bool:
        return bool(self._view.nullable)

    @cached_property
    def id(self) -> TypeId:
        """The type's id: its name, e.g. ``'int32'``, ``'string'``, ``'dictionary'``, ``'timestamp'``,
        that is also PyArrow's integer id of the type (:class:`TypeId`), so ``pyarrow.types.is_*(t)``
        work on a DataType as on a PyArrow type."""
        return _type_id(self._view.type)

    @cached_property
    def storage_id(self) -> str:
        """The physical type: the index type of a dictionary, int64 for timestamps, etc."""
        storage_id: str = self._view.storage_type
        return storage_id

    @cached_property
    def _children(self) -> tuple[DataType, ...]:
        return tuple(DataType(child) for child in self._c.children)

    @property
    def children(self) -> list[DataType]:
        return list(self._children)

    @property
    def field_names(self) -> list[str]:
        """Names of the children (the column names of a struct / record batch type)."""
        return [child.name for child in self._c.children]

    @cached_property
    def value_type(self) -> DataType | None:
        """The dictionary's value type, or None for a type that is not a dictionary."""
        return None if self._c.dictionary is None else DataType(self._c.dictionary)

    @property
    def fixed_size(self) -> int | None:
        """Width of fixed_size_binary / list size of fixed_size_list, else None."""
        size: int | None = self._view.fixed_size
        return size

    def element_bits(self, buffer: int) -> int:
        """Bits per element of buffer ``buffer`` in nanoarrow's layout of this type."""
        return self._element_bits[buffer]

    @cached_property
    def _element_bits(self) -> tuple[int, ...]:
        # nanoarrow builds the layout anew at each access (about 5 us); planning asks once per chunk
        return tuple(self._view.layout.element_size_bits)

    def with_name(self, name: str) -> DataType:
        """The same type under another field name."""
        return DataType(self._c.modify(name=name))

    def with_nullable(self, nullable: bool) -> DataType:
        """The same type, its field marked nullable or not (as ``pyarrow.Field.with_nullable``)."""
        return self if self.nullable == nullable else DataType(self._c.modify(nullable=bool(nullable)))

    def to_pyarrow(self) -> Any:
        """The equivalent ``pyarrow.DataType``."""
        import pyarrow as pa

        return pa.field(self).type

    @cached_property
    def ipc_schema(self) -> bytes:
        """The Arrow IPC encoding of a schema of one field of this type, name and metadata included (PyArrow
        writes it), as serialized frames and CUDA IPC descriptions carry it; kept with the type, which never
        changes (a table's slices share their schema, and each send or export of them would write it again).

        >>> import pyarrow as pa, arrowdev as ad
        >>> t = ad.DataType.from_arrow(pa.field("x", pa.int32()))
        >>> pa.ipc.read_schema(pa.py_buffer(t.ipc_schema)).field(0)
        pyarrow.Field<x: int32>
        """
        import pyarrow as pa

        encoded: bytes = pa.schema([pa.field(self)]).serialize().to_pybytes()
        return encoded

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataType):
            try:  # a PyArrow type, field or any other producer of a schema: compared as its type
                other = DataType.from_arrow(_pyarrow_alias(other) if isinstance(other, str) else other)
            except (TypeError, ValueError):
                return NotImplemented
        return _same_type(self._c, other._c)

    def __hash__(self) -> int:
        return hash(self.format)

    @cached_property
    def _text(self) -> str:
        try:  # as PyArrow prints it, for the types PyArrow has
            return str(self.to_pyarrow())
        except (KeyError, NotImplementedError, ValueError, TypeError):  # interval[months], interval[day_time]
            return repr(na.Schema(self._c.modify(name="", nullable=True))).removeprefix("<Schema> ")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return self._text


def type_of_schema(capsule: Any) -> DataType:
    """The DataType of an ``arrow_schema`` capsule, parsed once per distinct schema: capsules whose
    trees have the same content share one DataType, which wraps arrowdev's own copy of the schema,
    so no producer's capsule is kept.

    The producer's tree is checked in C first (capsules/check.c: NULL and released nodes, shared
    nodes, depth, formats, metadata lengths), then looked up in the native core's type cache (the
    only one: capsules/py_types.c); a type not seen before is copied without the flags that mean
    nothing for a node's type, and the copy is parsed by nanoarrow at every node
    (:func:`_parse_schema`), so a malformed tree raises :class:`~arrowdev.InvalidArrowError` here,
    and not when a later call reaches the bad node. A capsule of another name raises
    ``ValueError``; another object ``TypeError``.

    >>> import pyarrow as pa
    >>> type_of_schema(pa.int64().__arrow_c_schema__()) is type_of_schema(pa.int64().__arrow_c_schema__())
    True
    """
    dtype: DataType = _capsules.type_of_schema(capsule)
    return dtype


def _parse_schema(copy: Any) -> DataType:
    """The parser the native type cache calls on a miss: a DataType over ``copy`` (arrowdev's own
    checked copy of a producer's schema, an ``arrow_schema`` capsule), every node parsed now."""
    try:
        dtype = DataType(na.c_schema(copy))
    except (TypeError, ValueError, RuntimeError) as e:  # nanoarrow's errors, if its rules are stricter
        raise InvalidArrowError(f"malformed Arrow schema: {e}") from e
    _parse_every_node(dtype)
    return dtype


def _parse_every_node(dtype: DataType) -> None:
    """Has nanoarrow parse every node's format now (it parses lazily otherwise)."""
    pending = [dtype]
    while pending:
        node = pending.pop()
        node._view
        pending.extend(node._children)
        if node.value_type is not None:
            pending.append(node.value_type)


_TYPE_IDS: dict[str, TypeId] = {}


def _pyarrow_alias(name: str) -> Any:
    """The PyArrow type a name stands for (``"float64"``, ``"str"``), as PyArrow's ``==`` reads a string;
    ValueError for a name PyArrow does not know."""
    import pyarrow as pa

    return pa.type_for_alias(name)


def _type_id(name: str) -> TypeId:
    """One TypeId per type name."""
    found = _TYPE_IDS.get(name)
    if found is None:
        found = _TYPE_IDS[name] = TypeId(name)
    return found


def _same_type(a: Any, b: Any) -> bool:
    if a.format != b.format or a.n_children != b.n_children:
        return False
    if (a.dictionary is None) != (b.dictionary is None):
        return False
    if a.dictionary is not None and not _same_type(a.dictionary, b.dictionary):
        return False
    return all(x.name == y.name and _same_type(x, y) for x, y in zip(a.children, b.children))


_capsules.register_types(DataType, _parse_schema)
