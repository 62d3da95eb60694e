"""ArrowTable: named columns of equal length, held zero-copy, exported as record batches.

A table is its columns (like ``pyarrow.Table``); one column may be shared by many tables and no
table operation copies column data. Exports build record batches (struct arrays) whose children
are the columns' chunks, sliced where chunk boundaries differ between columns.

>>> import pyarrow as pa
>>> import arrowdev as ad
>>> tbl = ad.table({"a": pa.array([1, 2, 3]), "b": pa.array(["x", None, "z"])})
>>> tbl.num_rows, tbl.column_names
(3, ['a', 'b'])
>>> tbl.select(["b"]).slice(1, 2).to_pyarrow().to_pydict()
{'b': [None, 'z']}
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, SupportsIndex, cast

import nanoarrow as na

from . import _capsules
from .core import chunks as _chunked
from .core.chunks import struct_field
from .core.from_arrow import read_arrow
from .core.to_arrow import HOST_LABELS, StreamOnly
from .column import ArrowColumn, conformed
from .interop import take as _take
from .errors import InvalidArrowError
from .core.types import DataType, Device

__all__ = ["ArrowTable", "table"]

_EMPTY_STRUCT = na.c_schema(na.struct([]))
_PREVIEW_ROWS = 5


class ArrowTable:
    """A table of named :class:`ArrowColumn` objects of equal length, on one device.

    Build one with :func:`arrowdev.table` (``ArrowTable.from_arrow``) from any Arrow producer of
    record batches / tables / struct arrays, or from a mapping of names to columns.
    """

    __slots__ = ("_column_list", "_num_rows", "_metadata", "_batches", "_schema", "__weakref__")

    def __init__(self, columns: list[ArrowColumn] | None, num_rows: int, metadata: Any = None,
                 batches: list[Any] | None = None, schema: DataType | None = None) -> None:
        chunked = self._check_columns(columns, num_rows) if columns else False
        if columns is None and (batches is None or schema is None):
            raise ValueError("expected columns, or record batches and their schema")
        self._column_list = None if columns is None else list(columns)  # None: made from the batches on demand
        self._num_rows = num_rows
        self._metadata = metadata
        self._batches = batches  # the record batches to export, built lazily when None
        self._schema = schema  # the struct type, built lazily when None
        if chunked or batches is not None:
            self._take_class()
        else:  # columns of one chunk (or none) each: one record batch at most
            self.__class__ = ArrowTable

    @staticmethod
    def _check_columns(columns: list[ArrowColumn], num_rows: int) -> bool:
        """Checks that every column has ``num_rows`` rows and that all lie on one device, in one pass over
        the chunks (this runs for every table a UDF call or ``append_column`` makes); True when a column has
        more than one chunk."""
        where, chunked = set(), False
        for col in columns:
            held = _chunked.chunks(col)
            rows = 0
            for c in held:
                rows += c.length
                where.add((c.device_type, c.device_id))
            if rows != num_rows:
                raise ValueError(f"expected every column to have {num_rows} rows, got {rows} in {col.name!r}")
            chunked = chunked or len(held) > 1
        if len(where) > 1:
            raise ValueError(f"expected columns on one device, got {sorted({c.device for c in columns})}")
        return chunked

    def _take_class(self) -> None:
        """Becomes a table of several batches, which offers only the stream protocols (as
        PyArrow's Table does), or stays one that offers every protocol."""
        self.__class__ = _ChunkedTable if self._batch_count() > 1 else ArrowTable

    def _batch_count(self) -> int:
        """How many record batches the exports yield."""
        if self._batches is not None:
            return len(self._batches)
        return len(_chunked.aligned_bounds(self._columns, self._num_rows))

    @classmethod
    def from_arrow(cls, obj: Any, schema: Any = None) -> ArrowTable:
        """A table from any Arrow producer of struct data (record batches, tables, readers,
        struct arrays; Polars DataFrames; arrowdev objects) or a mapping name -> column (names are
        strings; bytes and None are read as ``pa.table`` reads them, any other key is refused)."""
        if isinstance(obj, ArrowTable) and schema is None:
            return obj
        if isinstance(obj, Mapping):
            columns = [ArrowColumn.from_arrow(value).rename(_column_name(name)) for name, value in obj.items()]
            made = cls(columns, len(columns[0]) if columns else 0)
            return made if schema is None else made._conformed(DataType.from_arrow(schema))
        dtype, batches = read_arrow(obj, schema)
        if dtype.storage_id != "struct":
            raise TypeError(f"expected struct (record batch / table) data, got {dtype}")
        made = cls._from_batches(dtype, batches)
        return made if schema is None else made._conformed(DataType.from_arrow(schema))

    def _conformed(self, wanted: DataType) -> ArrowTable:
        """This table with the schema ``wanted``: itself where the producer honoured it, else its columns
        cast by PyArrow (:func:`arrowdev.column.conformed`), as ``pa.table(obj, schema=)`` does."""
        if wanted.storage_id != "struct":
            raise TypeError(f"expected a schema (a struct type) for a table, got {wanted}")
        if self.schema == wanted:
            return self
        if wanted.field_names != self.column_names:
            raise ValueError(f"schema= names the columns {wanted.field_names}, the producer gave "
                             f"{self.column_names}: rename or select them first")
        columns = [conformed(c, t.with_name(c.name or "")) for c, t in zip(self._columns, wanted.children)]
        return ArrowTable(columns, self._num_rows, wanted.metadata if wanted.metadata is not None else self._metadata)

    @classmethod
    def _from_batches(cls, dtype: DataType, batches: list[Any]) -> ArrowTable:
        # a column of the batches checks that they share one device; one batch needs it only when
        # a null count is to be computed
        probe = ArrowColumn(dtype, batches) if len(batches) > 1 else None
        num_rows, offsets = 0, False
        for i, batch in enumerate(batches):  # one plain loop: this runs on every import of a table
            if batch.null_count != 0 or batch.needs_null_counts:
                probe = probe or ArrowColumn(dtype, batches)
                if _chunked.chunk_null_count(probe, i):
                    raise InvalidArrowError("a struct array with top-level nulls cannot be a table: "
                                            "its null rows have no meaning per column")
                _chunked.ready_chunk(probe, i)  # exports carry computed null counts (C6)
            num_rows += batch.length
            offsets = offsets or batch.offset > 0
        table = object.__new__(cls)  # what __init__ checks holds for one struct type's batches
        table._column_list, table._num_rows, table._metadata = None, num_rows, dtype.metadata
        table._batches, table._schema = batches, dtype
        if offsets:  # not record batches as they are: rebuilt from the columns
            table._column_list, table._batches = table._columns, None
        table._take_class()
        return table

    @classmethod
    def from_pydict(cls, mapping: Mapping[str, Any], schema: Any = None, metadata: Any = None) -> ArrowTable:
        """A table from a mapping name -> values (lists or anything PyArrow's ``Table.from_pydict``
        takes), built by PyArrow.

        >>> import arrowdev as ad
        >>> ad.ArrowTable.from_pydict({"a": [1, 2], "b": ["x", None]}).to_pydict()
        {'a': [1, 2], 'b': ['x', None]}
        """
        import pyarrow as pa

        return cls.from_arrow(pa.Table.from_pydict(dict(mapping), schema=schema, metadata=metadata))

    @property
    def _columns(self) -> list[ArrowColumn]:
        """The columns, made from the record batches the first time they are needed (an imported
        table that is only passed on never splits into columns)."""
        if self._column_list is None:
            batches = self._batches
            self._column_list = [ArrowColumn(child, [struct_field(b, i) for b in cast(list[Any], batches)])
                                 for i, child in enumerate(self.schema.children)]
        return self._column_list

    # ---- introspection ------------------------------------------------------------------------

    @property
    def schema(self) -> DataType:
        """The table's type: a struct whose children are the columns' types."""
        if self._schema is None:
            children = [col.type.c_schema for col in self._columns]
            self._schema = DataType(_EMPTY_STRUCT.modify(children=children, metadata=self._metadata))
        return self._schema

    @property
    def num_rows(self) -> int:
        return self._num_rows

    def __len__(self) -> int:
        return self._num_rows

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return self._num_rows, self.num_columns

    @property
    def nbytes(self) -> int:
        """The columns' :attr:`ArrowColumn.nbytes`, summed."""
        return sum(col.nbytes for col in self._columns)

    @property
    def num_columns(self) -> int:
        return len(self._columns) if self._column_list is not None else len(self.schema.field_names)

    @property
    def column_names(self) -> list[str]:
        if self._column_list is None:
            return [name or "" for name in self.schema.field_names]
        return [col.name or "" for col in self._columns]

    @property
    def columns(self) -> list[ArrowColumn]:
        return list(self._columns)

    @property
    def device(self) -> Device:
        if self._column_list is None and self._batches:
            return Device.from_code(self._batches[0].device_type, self._batches[0].device_id)
        return self._columns[0].device if self._columns else Device.cpu()

    def column(self, key: int | str) -> ArrowColumn:
        """A column by position or name."""
        return self._columns[self._index(key)]

    def __getitem__(self, key: int | str | slice | Any) -> Any:
        """``tbl["a"]`` / ``tbl[0]`` a column (as in PyArrow); ``tbl[a:b]`` a zero-copy slice of rows;
        ``tbl[::k]`` and ``tbl[[i, j, ...]]`` take rows (a copy, see :meth:`take`)."""
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(self._num_rows)
            return self.slice(start, max(stop - start, 0))
        if _take.is_row_selection(key):
            if isinstance(key, (list, tuple)) and any(isinstance(k, str) for k in key):
                raise TypeError(f"expected integer row indices, got names {list(key)!r}: "
                                "select columns with tbl.select(names)")
            return self.take(key)
        return self.column(cast("int | str", key))

    def take(self, indices: Any) -> ArrowTable:
        """The rows at ``indices``, in that order, from every column (a copy; see
        :meth:`ArrowColumn.take`)."""
        rows = _take.row_indices(indices, self._num_rows)
        return ArrowTable([ArrowColumn(*_take.take_column(c, rows)) for c in self._columns], len(rows),
                          self._metadata)

    def _index(self, key: int | str) -> int:
        if isinstance(key, str):
            names = self.column_names
            if key not in names:
                raise KeyError(f"no column {key!r}: the columns are {names}")
            if names.count(key) > 1:  # PyArrow raises KeyError too: a name that is not unique names nothing
                where = [i for i, name in enumerate(names) if name == key]
                raise KeyError(f"column {key!r} is ambiguous: {len(where)} columns have that name (at {where}); "
                               "pick one by position, tbl.column(i)")
            return names.index(key)
        if isinstance(key, int) and -len(self._columns) <= key < len(self._columns):
            return key % len(self._columns)
        raise IndexError(f"column index {key!r} out of range for {len(self._columns)} columns")

    # ---- operations (none copies column data) ---------------------------------------------

    def _with_columns(self, columns: list[ArrowColumn]) -> ArrowTable:
        return ArrowTable(columns, self._num_rows, self._metadata)

    def select(self, keys: Iterable[int | str]) -> ArrowTable:
        """The given columns, in the given order."""
        return self._with_columns([self.column(k) for k in keys])

    def drop_columns(self, keys: int | str | Iterable[int | str]) -> ArrowTable:
        """The table without the given columns."""
        keys = [keys] if isinstance(keys, (int, str)) else list(keys)
        dropped = {self._index(k) for k in keys}
        return self._with_columns([c for i, c in enumerate(self._columns) if i not in dropped])

    def rename_columns(self, names: Iterable[str] | Mapping[str, str]) -> ArrowTable:
        """New names, as a full list or a mapping old -> new."""
        if isinstance(names, Mapping):
            unknown = set(names) - set(self.column_names)
            if unknown:
                raise KeyError(f"no columns {sorted(unknown)}: the columns are {self.column_names}")
            names = [names.get(n, n) for n in self.column_names]
        names = list(names)
        if len(names) != self.num_columns:
            raise ValueError(f"expected {self.num_columns} names, got {len(names)}")
        return self._with_columns([c.rename(n) for c, n in zip(self._columns, names)])

    def append_column(self, name: str, data: Any) -> ArrowTable:
        """The table with one more column (anything :func:`arrowdev.column` takes)."""
        return self._with_columns(self._columns + [ArrowColumn.from_arrow(data).rename(name)])

    def slice(self, offset: int = 0, length: int | None = None) -> ArrowTable:
        """Rows [offset, offset + length), zero-copy."""
        columns = [c.slice(offset, length) for c in self._columns]
        start = min(max(offset, 0), self._num_rows)
        rows = self._num_rows - start if length is None else min(length, self._num_rows - start)
        return ArrowTable(columns, rows, self._metadata, schema=self.schema)  # the same columns' types and names

    # ---- devices -------------------------------------------------------------------------------

    def to_device(self, device: int = 0, stream: Any = None, *, rechunk: bool | None = None) -> ArrowTable:
        """A copy of every column on CUDA device ``device``, in one batch of asynchronous copies
        (see :meth:`ArrowColumn.to_device`, and ``rechunk`` there: columns of many small chunks, as
        ``pyarrow.parquet.read_table`` makes them, arrive as one chunk each). Otherwise the copy is laid out
        as the table is: record batches keep their boundaries, empty ones included; columns chunked
        differently keep their own chunks."""
        return self._copy_to(Device("cuda", device), stream, rechunk)

    def to_host(self, stream: Any = None) -> ArrowTable:
        """A copy of every column in pinned host memory (see :meth:`ArrowColumn.to_host`)."""
        if self.device.is_cpu_readable:
            return self
        return self._copy_to(Device("cuda_host", self.device.id), stream)

    def _copy_to(self, target: Device, stream: Any, rechunk: bool | None = False) -> ArrowTable:
        """The table copied to ``target``: column by column, each keeping its chunks (or merged into one,
        ``rechunk``), where the columns are chunked differently (copied as record batches they would be cut
        at every column's chunk boundary) or some merge; else the record batches (a table of no rows gets
        one empty batch, so that it has a device)."""
        if self.device == target:
            return self
        from .cuda import copy_columns, merges_on_copy
        from .cuda.transfer import MERGE_MORE_CHUNKS_THAN

        columns = self._column_list
        if (columns is None and target.type == "cuda" and self.device.is_cpu_readable
                and (rechunk or (rechunk is None and self._batch_count() > MERGE_MORE_CHUNKS_THAN))):
            columns = self.columns  # the batches' columns, to see whether any merges
        if columns is not None and (len({tuple(c.length for c in _chunked.chunks(col)) for col in columns}) > 1
                                    or any(merges_on_copy(col, target, rechunk) for col in columns)):
            whole: list[Any] = [col._with_a_chunk() for col in columns]
            copied_columns = cast(list[ArrowColumn], copy_columns(whole, target, stream, rechunk))
            return ArrowTable(copied_columns, self._num_rows, self._metadata, schema=self.schema)
        batches = self.to_struct_array()._with_a_chunk()
        _chunked.exportable_chunks(batches)  # the columns' null counts, computed where readable, go with the copy
        copied = copy_columns([batches], target, stream)[0]
        return ArrowTable._from_batches(self.schema, _chunked.chunks(copied))

    def export_ipc(self, *, hold: float = 0.0) -> bytes:
        """Bytes another process on this node passes to :func:`arrowdev.import_ipc` to see this GPU
        table's memory, zero-copy. Each import takes a lease: the memory stays until every importer
        has released it, even if this table goes first. New imports are taken while this table lives,
        or for ``hold`` seconds after this call (docs/memory.md)."""
        from .cuda.ipc import export_ipc

        return export_ipc(self, hold)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, tuple[Any, ...]]:
        """Pickles the rows in range, as :meth:`ArrowColumn.__reduce_ex__` does."""
        from .serialize.frames import reduce

        return reduce(self, operator.index(protocol))

    # ---- UDFs ----------------------------------------------------------------------------------

    def apply(self, f: Any, columns: Iterable[int | str] | None = None, *, null_aware: bool = False,
              out_type: Any = None, stream: Any = None, string_type: str = "string",
              device: int | str | None = None) -> ArrowColumn:
        """``f(a, b, ...)`` row by row over ``columns`` (default: all, in order); a new column.
        A row with a null in any argument is null unless ``null_aware=True`` (see
        :meth:`ArrowColumn.apply`, also for ``device``).

        >>> import pyarrow as pa, arrowdev as ad
        >>> t = ad.table({"a": pa.array([1, -2, 3]), "b": pa.array([10, 20, None])})
        >>> t.apply(lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).to_pylist()
        [10, 20, None]
        """
        from .udf.run.apply import apply_columns

        chosen = [self.column(c) for c in (columns if columns is not None else range(self.num_columns))]
        if not chosen:
            raise ValueError("expected at least one column for the UDF's arguments")
        from .streaming import apply_on_gpu, gpu_for

        def run(columns: list[ArrowColumn]) -> ArrowColumn:
            return ArrowColumn(*apply_columns(f, columns, null_aware, out_type, stream, string_type=string_type))

        gpu = gpu_for(device, chosen[0].device)
        return run(chosen) if gpu is None else cast(ArrowColumn, apply_on_gpu(run, chosen, gpu))

    # ---- conversions -------------------------------------------------------------------------

    def to_pyarrow(self) -> Any:
        """A ``pyarrow.Table`` over the same buffers (device data is copied to host)."""
        import pyarrow as pa

        return pa.table(self)

    def to_pylist(self) -> list[dict[str, Any]]:
        """The rows as dicts name -> value."""
        names, columns = self.column_names, [col.to_pylist() for col in self._columns]
        return [dict(zip(names, row)) for row in zip(*columns)] if columns else [{}] * self._num_rows

    def to_pydict(self) -> dict[str, list[Any]]:
        """The columns as lists, by name (a later column wins a repeated name, as in PyArrow)."""
        return {name: col.to_pylist() for name, col in zip(self.column_names, self._columns)}

    def to_batches(self) -> list[ArrowTable]:
        """The record batches the exports yield, each a table of one batch (zero-copy)."""
        return [ArrowTable._from_batches(self.schema, [batch]) for batch in _chunked.chunks(self.to_struct_array())]

    def combine_chunks(self) -> ArrowTable:
        """The table as one record batch (a copy when it has several). Such a table offers the
        array protocols again."""
        struct = self.to_struct_array()
        if struct.num_chunks == 1:
            return self
        return ArrowTable._from_batches(self.schema, _chunked.chunks(struct._with_a_chunk().combine_chunks()))

    def __iter__(self) -> Iterator[ArrowColumn]:
        """The columns (as for a Polars DataFrame)."""
        return iter(self.columns)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """``numpy.asarray(tbl)``: a 2-D array, rows by columns: always a copy (``copy=False``
        raises ValueError)."""
        import numpy as np

        if copy is False:
            raise ValueError("expected a copy: a table becomes a 2-D NumPy array only by a copy (copy=False)")
        columns = [np.asarray(col) for col in self._columns]
        out = np.column_stack(columns) if columns else np.empty((self._num_rows, 0))
        return out if dtype is None else out.astype(dtype, copy=False)

    def equals(self, other: Any) -> bool:
        """True when ``other`` (any Arrow table producer) has the same schema and values."""
        other = ArrowTable.from_arrow(other)
        return (self.column_names == other.column_names and self._num_rows == other._num_rows
                and all(a.equals(b) for a, b in zip(self._columns, other._columns)))

    def __eq__(self, other: object) -> Any:
        """``equals`` (as PyArrow's ``==``); NotImplemented for what is not Arrow data."""
        try:
            return self.equals(other)
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        device = self.device
        head = (f"<arrowdev.ArrowTable rows={self._num_rows} columns={self.num_columns} "
                f"batches={self._batch_count()} device={device.type}:{device.id}>")
        schema = "\n".join(f"{name}: {col.type}" for name, col in zip(self.column_names, self._columns))
        if not device.is_cpu_readable or not self._columns:
            return f"{head}\n{schema}"
        more = " ..." if self._num_rows > _PREVIEW_ROWS else ""
        try:
            rows = [f"{name}: {col.slice(0, _PREVIEW_ROWS).to_pylist()!r}{more}"
                    for name, col in zip(self.column_names, self._columns)]
        except Exception as e:  # a repr must not fail: say why there is no preview
            rows = [f"<no preview: {type(e).__name__}: {e}>"]
        return "\n".join([head, schema, "----", *rows])

    # ---- exports: a struct column of record batches speaks every protocol ---------------------

    def to_struct_array(self) -> ArrowColumn:
        """The record batches as one struct column, a chunk per batch (zero-copy), as PyArrow's
        ``Table.to_struct_array``; :meth:`from_struct_array` makes the table again.

        >>> import pyarrow as pa, arrowdev as ad
        >>> ad.table({"a": pa.array([1, 2])}).to_struct_array().to_pylist()
        [{'a': 1}, {'a': 2}]
        """
        if self._batches is None:
            self._batches = self._build_batches()
        return ArrowColumn(self.schema, self._batches)

    _as_struct_column = to_struct_array  # the name udf/apply.py on main uses

    @classmethod
    def from_struct_array(cls, struct: Any) -> ArrowTable:
        """A table whose record batches are the chunks of a struct column without top-level nulls
        (any Arrow producer of one), zero-copy, as PyArrow's ``Table.from_struct_array``.

        >>> import pyarrow as pa, arrowdev as ad
        >>> ad.ArrowTable.from_struct_array(pa.array([{"a": 1}, {"a": 2}])).to_pydict()
        {'a': [1, 2]}
        """
        col = struct if isinstance(struct, ArrowColumn) else ArrowColumn.from_arrow(struct)
        if col.type.storage_id != "struct":
            raise TypeError(f"expected a struct column, got {col.type}")
        return cls._from_batches(col.type, _chunked.chunks(col))

    def _build_batches(self) -> list[Any]:
        device = self.device
        batches = []
        bounds = _chunked.aligned_bounds(self._columns, self._num_rows)
        whole = len(bounds) == 1 and all(col.num_chunks == 1 for col in self._columns)  # no column to slice
        for lo, hi in bounds:
            pieces = [_chunked.exportable_chunks(col if whole else col.slice(lo, hi - lo))[0] for col in self._columns]
            # the columns' producers (a copy, a UDF) become the batch's: consumers wait on the batch's event
            event, keep = _chunked.joined_sync_event(pieces, device)
            batches.append(_capsules.build(self.schema, hi - lo, 0, 0, [0], pieces, device_type=device.code,
                                           device_id=device.id, keepalive=keep, sync_event=event))
        return batches

    def __arrow_c_schema__(self) -> Any:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_device_array__(self, requested_schema: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        """One record batch (struct array), zero-copy; pinned host memory goes out as CPU memory.
        A table of several batches has no such attribute (only the streams)."""
        batches = self._batches
        if (requested_schema is None and not kwargs and batches is not None and len(batches) == 1
                and batches[0].device_type not in HOST_LABELS):
            pair: tuple[Any, Any] | None = batches[0].export_pair(True)  # the hot path
            if pair is not None:
                return pair
        return self.to_struct_array().__arrow_c_device_array__(requested_schema, **kwargs)

    def __arrow_c_array__(self, requested_schema: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        """One record batch on the CPU (device data: a host copy first). A table of several
        batches has no such attribute (only the streams)."""
        return self.to_struct_array().__arrow_c_array__(requested_schema, **kwargs)

    def __arrow_c_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """The record batches as a stream, zero-copy (device data is copied to host first)."""
        return self.to_struct_array().__arrow_c_stream__(requested_schema, **kwargs)

    def __arrow_c_device_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """The record batches as a device stream, zero-copy."""
        return self.to_struct_array().__arrow_c_device_stream__(requested_schema, **kwargs)


def _column_name(name: Any) -> str:
    """A mapping's key as a column name, as ``pa.table`` reads one: a string, bytes (UTF-8) or None
    (``'None'``); anything else is refused (TypeError)."""
    if isinstance(name, str):
        return name
    if isinstance(name, bytes):
        return name.decode()
    if name is None:
        return "None"
    raise TypeError(f"expected column names that are strings, got {type(name).__name__} {name!r}: "
                    f"name it {str(name)!r}")


class _ChunkedTable(ArrowTable):
    """An ArrowTable of several record batches: only the stream protocols (see
    :class:`arrowdev.core.to_arrow.StreamOnly`)."""

    __slots__ = ()
    __arrow_c_array__ = StreamOnly()
    __arrow_c_device_array__ = StreamOnly()


def table(obj: Any, schema: Any = None) -> ArrowTable:
    """A table from any Arrow producer or a mapping name -> column: same as
    :meth:`ArrowTable.from_arrow`.

    >>> import pyarrow as pa, arrowdev as ad
    >>> ad.table(pa.table({"x": [1, 2]})).column_names
    ['x']
    """
    return ArrowTable.from_arrow(obj, schema)


_chunked.register_maker("table", ArrowTable._from_batches)
_chunked.register_maker("table_of_columns", lambda struct_type, columns, num_rows:
                        ArrowTable(columns, num_rows, struct_type.metadata, schema=struct_type))
