"""ArrowColumn: one column of Arrow data on any device, held zero-copy, in one or more chunks.

>>> import pyarrow as pa
>>> import arrowdev as ad
>>> col = ad.column(pa.chunked_array([["a", "bc"], [None, "d"]]))
>>> len(col), col.num_chunks, col.null_count, col.type
(4, 2, 1, string)
>>> col[1:3].to_pylist()
['bc', None]
>>> hasattr(col, "__arrow_c_array__")  # several chunks: only the stream protocols, as in PyArrow
False
>>> pa.array(col.combine_chunks())  # the one copy, explicit
<pyarrow.lib.StringArray object at ...>
[
  "a",
  "bc",
  null,
  "d"
]
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Callable, Iterator, SupportsIndex, cast

from . import _capsules
from .core import chunks as _chunked, layout
from .core.chunks import reader_for, struct_field  # noqa: F401  (udf/apply.py on main imports them from here)
from .core.layout import BufferInfo
from .interop import take as _take
from .core.from_arrow import check_tree, read_arrow, read_arrow_after
from .core.to_arrow import (StreamOnly, array_capsules, cheap_target, check_kwargs, cpu_labelled,
                            pyarrow_import_device_array, stream_capsule)
from .errors import InvalidArrowError
from .core.types import DataType, Device

__all__ = ["ArrowColumn", "BufferInfo", "column"]

_PREVIEW_ROWS = 10
_CPU = 1  # ArrowDeviceType of CPU memory


_APPLY: list[Callable[..., Any]] = []


def _udf_runner() -> Callable[..., Any]:
    """``arrowdev.udf.run.apply.apply_columns``, imported on first use (numba loads only when a UDF runs)."""
    if not _APPLY:
        from .udf.run.apply import apply_columns

        _APPLY.append(apply_columns)
    return _APPLY[0]


class ArrowColumn(_capsules.ColumnCore):
    """A column of Arrow data: a type and zero or more chunks, all on one device.

    Build one with :func:`arrowdev.column` (``ArrowColumn.from_arrow``) from any Arrow producer.
    It exports every Arrow PyCapsule protocol; nothing is copied except where a method says so.

    Its state lives in its native base, ``_capsules.ColumnCore`` (capsules/py_column.c): ``_type``,
    ``_chunks`` (a list of held arrays) and ``_nulls`` (per chunk, the null count where known;
    None until first needed); :mod:`arrowdev.core.chunks` is the layer that works on it. The base
    also runs the hot path of ``__arrow_c_device_array__`` and
    ``__arrow_c_array__`` (one chunk, no request); every other case comes back to
    :meth:`_arrow_c_device_array` and :meth:`_arrow_c_array` here.
    """

    __slots__ = ()

    def __init__(self, dtype: DataType, chunks: list[Any]) -> None:
        self._type = dtype
        # a list is taken as it is (no column changes its chunk list, so columns may share one)
        self._chunks = chunks = chunks if type(chunks) is list else list(chunks)
        if len(chunks) > 1:
            if len({(c.device_type, c.device_id) for c in chunks}) > 1:
                raise ValueError("expected every chunk of a column on one device, got chunks on several")
            self.__class__ = _ChunkedColumn  # offers only the stream protocols
        elif self.__class__ is _ChunkedColumn:  # made as type(a chunked column)(...) with one chunk
            self.__class__ = ArrowColumn  # type: ignore[assignment]  # back from _ChunkedColumn

    _null_list = _chunked.null_counts

    @classmethod
    def from_arrow(cls, obj: Any, schema: Any = None) -> ArrowColumn:
        """A column from any Arrow producer (see :mod:`arrowdev.core.from_arrow` for the order in
        which the protocols are tried), zero-copy. ``schema`` is passed on as the requested schema,
        or gives the type of a bare array capsule."""
        return column(obj, schema)

    # ---- introspection ------------------------------------------------------------------------

    @property
    def type(self) -> DataType:
        return self._type

    @property
    def name(self) -> str | None:
        """The field name that came with the data (``None`` or ``''`` when unnamed)."""
        return self._type.name

    def __len__(self) -> int:
        return sum(c.length for c in self._chunks)

    @property
    def num_chunks(self) -> int:
        return len(self._chunks)

    @property
    def chunks(self) -> list[ArrowColumn]:
        """Each chunk as a column of its own (zero-copy)."""
        return [self._derive([c], [n]) for c, n in zip(self._chunks, self._null_list())]

    device = property(_chunked.device)

    @property
    def null_count(self) -> int:
        """Nulls in the column, computed from the validity bitmaps where the producer said -1."""
        return sum(self._chunk_null_count(i) for i in range(len(self._chunks)))

    _chunk_null_count = _chunked.chunk_null_count
    _wait_for_producers = _chunked.wait_for_producers

    def _read(self, address: int, nbytes: int) -> bytes:
        """Reads this column's memory (after its producers' sync events, C7)."""
        return _chunked.read(self)(address, nbytes)

    @property
    def buffers(self) -> list[BufferInfo]:
        """Every buffer of every node (top, children depth first, then the dictionary) of every
        chunk, with the bytes the node uses from the buffer's start."""
        read, device = _chunked.read(self), self.device  # after the producers (C7): offsets may be in flight
        out: list[BufferInfo] = []
        for i, chunk in enumerate(self._chunks):
            out.extend(layout.node_buffers(self._type, layout.Node.of(chunk), "", i, read, device))
        return out

    @property
    def children(self) -> list[ArrowColumn]:
        """The child arrays exactly as stored (for a struct, not adjusted for the struct's offset:
        use :meth:`field` for that)."""
        return [self._child_column(t, [c.child(i) for c in self._chunks]) for i, t in enumerate(self._type.children)]

    @property
    def dictionary(self) -> ArrowColumn | None:
        """The dictionary values of a dictionary column (one chunk per chunk), else None."""
        value_type = self._type.value_type
        if value_type is None:
            return None
        return self._child_column(value_type, [c.dictionary() for c in self._chunks])

    def field(self, key: int | str) -> ArrowColumn:
        """Child ``key`` (index or name) of a struct column over the struct's rows, zero-copy.
        As in PyArrow's ``StructArray.field``, the struct's own validity is not applied."""
        if self._type.storage_id != "struct":
            raise TypeError(f"expected a struct column, got {self._type}")
        names = self._type.field_names
        index = names.index(key) if isinstance(key, str) and key in names else key
        if not isinstance(index, int) or not 0 <= index < len(names):
            raise KeyError(f"no field {key!r}: the fields are {names}")
        return self._child_column(self._type.children[index], [struct_field(c, index) for c in self._chunks])

    def rename(self, name: str) -> ArrowColumn:
        """The same column (zero-copy) under another field name."""
        return _chunked.derive(self, self._chunks, self._null_list(), self._type.with_name(name))

    def with_nullable(self, nullable: bool) -> ArrowColumn:
        """The same column (zero-copy), its field marked nullable or not (as ``pyarrow.Field.with_nullable``;
        a producer such as libcudf marks columns without nulls non-nullable where a file's schema does not).

        >>> import pyarrow as pa, arrowdev as ad
        >>> ad.column(pa.array([1, 2])).with_nullable(False).type.nullable
        False
        """
        if not nullable and self.null_count:
            raise ValueError(f"expected a column without nulls to mark non-nullable, got {self.null_count} nulls")
        wanted = self._type.with_nullable(nullable)
        return self if wanted is self._type else _chunked.derive(self, self._chunks, self._null_list(), wanted)

    def _child_column(self, dtype: DataType, chunks: list[Any]) -> ArrowColumn:
        return ArrowColumn(dtype, chunks)

    _derive = _chunked.derive

    # ---- slicing -----------------------------------------------------------------------------

    def slice(self, offset: int = 0, length: int | None = None) -> ArrowColumn:
        """Rows [offset, offset + length), zero-copy (length is clipped to the end, as PyArrow does)."""
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"expected offset >= 0 and length >= 0, got {offset} and {length}")
        total = len(self)
        start = min(offset, total)
        stop = total if length is None else min(start + length, total)
        return _chunked.derive(self, *_chunked.slice_chunks(self, start, stop))

    _chunk_starts = _chunked.chunk_starts

    def take(self, indices: Any) -> ArrowColumn:
        """The rows at ``indices`` (a list, tuple or NumPy array of ints, or an integer Arrow column), in
        that order: a copy, as PyArrow's ``take`` (Polars' ``gather``). On a GPU, fixed-width types are
        gathered there (CuPy). Negative indices are refused, as by PyArrow (see :mod:`arrowdev.interop.take`)."""
        return ArrowColumn(*_take.take_column(self, _take.row_indices(indices, len(self))))

    def __getitem__(self, key: int | builtins.slice | Any) -> Any:
        """``col[i]`` a value; ``col[a:b]`` a zero-copy slice; ``col[::k]`` (any other step) and
        ``col[[i, j, ...]]`` (ints in a list, tuple, NumPy array or Arrow column) take rows, a copy."""
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(len(self))
            return self.slice(start, max(stop - start, 0))
        if _take.is_row_selection(key):
            return self.take(key)
        if hasattr(key, "__index__") and not isinstance(key, bool):
            key = operator.index(key)
            n = len(self)
            index = key + n if key < 0 else key
            if not 0 <= index < n:
                raise IndexError(f"index {key} out of range for a column of length {n}")
            return self.slice(index, 1).to_pylist()[0]
        raise TypeError(f"expected an int, a slice or a sequence of ints, got {type(key).__name__}")

    # ---- checks and conversions --------------------------------------------------------------

    def validate(self, *, full: bool = False) -> None:
        """Checks the structure of every chunk against the type (always done on import); with
        ``full=True`` also the data (offsets in order and in range, union ids, run ends) through
        PyArrow's full validation, on a host copy for device data. Raises InvalidArrowError."""
        for chunk in self._chunks:
            check_tree(self._type, chunk)
        if full:
            import pyarrow as pa

            from .interop.pyarrow import to_storage_chunked_array

            try:
                to_storage_chunked_array(self).validate(full=True)
            except (pa.ArrowInvalid, pa.ArrowException) as e:
                raise InvalidArrowError(f"invalid {self._type} data: {e}") from e

    def to_pyarrow(self) -> Any:
        """A ``pyarrow.ChunkedArray`` over the same buffers (device data is copied to host)."""
        from .interop.pyarrow import to_chunked_array

        return to_chunked_array(self)

    def to_pylist(self) -> list[Any]:
        """The values as Python objects, converted by PyArrow (device data is copied to host).
        interval[months] values are ints, interval[day_time] values ``(days, ms)`` tuples."""
        from .interop.pyarrow import to_pylist

        return to_pylist(self)

    def __iter__(self) -> Iterator[Any]:
        """The values as Python objects, a chunk at a time."""
        for chunk in self.chunks:
            yield from chunk.to_pylist()

    def equals(self, other: Any) -> bool:
        """True when ``other`` (any Arrow producer) has the same type and values, whatever the chunking
        and the string / binary / list layout (``string``, ``large_string`` and ``string_view`` compare by
        their values, as do ``list`` and ``large_list``: Polars hands strings over as ``string_view`` and
        lists as ``large_list``). PyArrow's ``==`` says False across layouts."""
        from .interop.pyarrow import equal_across_layouts, to_storage_chunked_array

        other = ArrowColumn.from_arrow(other)
        if self._type != other._type:
            return equal_across_layouts(self, other)
        return bool(to_storage_chunked_array(self).equals(to_storage_chunked_array(other)))

    def __eq__(self, other: object) -> Any:
        """``equals`` (as PyArrow's ``==``); NotImplemented for what is not Arrow data."""
        try:
            return self.equals(other)
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal columns must hash equal: values are not hashed

    @property
    def nbytes(self) -> int:
        """Bytes of the buffers the rows use, counted from each buffer's start (:attr:`buffers`)."""
        return sum(b.size for b in self.buffers if b.role != "variadic_sizes")

    def to_numpy(self, zero_copy_only: bool = True, writable: bool = False) -> Any:
        """A NumPy array of the values, with PyArrow's ``Array.to_numpy`` rules: a view of one CPU
        chunk of fixed-width data without nulls; otherwise (nulls, bool, strings, nested, several
        chunks, device data) ValueError unless ``zero_copy_only=False``, which copies (nulls
        become NaN or None as PyArrow makes them). ``writable=True`` always copies.

        >>> import pyarrow as pa, arrowdev as ad
        >>> ad.column(pa.array([1, 2, 3])).to_numpy()
        array([1, 2, 3])
        """
        from .interop.pyarrow import to_numpy

        return to_numpy(self, zero_copy_only, writable)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """``numpy.asarray(col)``: a view where :meth:`to_numpy` gives one, else a copy; with
        ``copy=False`` a needed copy raises ValueError (NumPy 2's rules)."""
        from .interop.pyarrow import array_protocol

        return array_protocol(self, dtype, copy)

    def __arrow_array__(self, type: Any = None) -> Any:
        """What ``pyarrow.array(col)`` returns (PyArrow asks this before the capsule protocols):
        an Array (a ChunkedArray for several chunks), zero-copy for CPU data; GPU data is copied
        to host unless PyArrow was built with CUDA (docs/device.md)."""
        chunks = self._chunks
        if type is None and len(chunks) == 1 and chunks[0].device_type == _CPU and not chunks[0].sync_event:
            return pyarrow_import_device_array()(*self.__arrow_c_device_array__())  # the hot path
        from .interop.pyarrow import to_array

        return to_array(self, type)

    def __repr__(self) -> str:
        device = self.device
        head = (f"<arrowdev.ArrowColumn type={self._type} length={len(self)} "
                f"chunks={self.num_chunks} device={device.type}:{device.id}>")
        if not device.is_cpu_readable:
            return head
        try:
            rows = self.slice(0, _PREVIEW_ROWS).to_pylist()
        except Exception as e:  # a repr must not fail: say why there is no preview
            return f"{head}\n<no preview: {type(e).__name__}: {e}>"
        return f"{head}\n{rows!r}" + (" ..." if len(self) > _PREVIEW_ROWS else "")

    # ---- devices -----------------------------------------------------------------------------

    def combine_chunks(self) -> ArrowColumn:
        """The column as one chunk (a copy when it has several; on device data, made on the host
        and copied back). Such a column offers the array protocols again."""
        if len(self._chunks) == 1:
            return self
        return self._derive([self._one_array()], [None])

    def to_device(self, device: int = 0, stream: Any = None, *, rechunk: bool | None = None) -> ArrowColumn:
        """A copy on CUDA device ``device`` (this column if it is there already).

        The copies are asynchronous on ``stream`` (a CuPy stream or a ``cudaStream_t``; default:
        arrowdev's stream for the device); the result's sync event fires when they are done, and
        every consumer of the result waits on it. Only the bytes of the rows in the column are
        copied (slices included). Needs CuPy and a GPU.

        ``rechunk``: a column of numbers, bools or strings copied from host memory arrives as one chunk
        where this is True, or where it is None (the default) and the column has many small chunks (more
        than 8, of fewer than 2^20 rows on average: what ``pyarrow.parquet.read_table`` gives), each of
        which would cost every UDF call a launch; False keeps the chunks. The merged copy is made by the
        same byte copies, no extra pass (docs/device.md, "Many small chunks become one")."""
        from .cuda import copy_columns

        return cast(ArrowColumn, copy_columns([self._with_a_chunk()], Device("cuda", device), stream, rechunk)[0])

    def _with_a_chunk(self) -> ArrowColumn:
        """This column, or for one of no chunks an empty chunk of its type (so that a copy of it
        has a device)."""
        if self._chunks:
            return self
        from .interop.pyarrow import empty_chunks

        return ArrowColumn(self._type, empty_chunks(self._type))

    def to_host(self, stream: Any = None) -> ArrowColumn:
        """A copy in pinned host memory (device ``cuda_host``) of device data, or this column if
        the CPU can already read it. Asynchronous like :meth:`to_device`; CPU reads wait for it."""
        if self.device.is_cpu_readable:
            return self
        from .cuda import copy_columns

        return cast(ArrowColumn, copy_columns([self], Device("cuda_host", self.device.id), stream)[0])

    def export_ipc(self, *, hold: float = 0.0) -> bytes:
        """Bytes another process on this node passes to :func:`arrowdev.import_ipc` to see this GPU
        column's memory, zero-copy. Each import takes a lease: the memory stays until every importer
        has released it, even if this column goes first. New imports are taken while this column lives,
        or for ``hold`` seconds after this call (see docs/memory.md, :mod:`arrowdev.cuda.ipc`)."""
        from .cuda.ipc import export_ipc

        return export_ipc(self, hold)

    # ---- UDFs --------------------------------------------------------------------------------

    def apply(self, f: Callable[..., Any], *, null_aware: bool = False, out_type: Any = None,
              stream: Any = None, string_type: str = "string", device: int | str | None = None) -> ArrowColumn:
        """``f(x)`` for every row, compiled by numba for the column's device (a CUDA kernel for GPU
        data, numba's CPU target otherwise); a new column on the same device. ``device="cuda"`` (or a
        GPU index) runs a CPU column's UDF on a GPU: copied there whole when it fits (the result stays on the
        GPU), else streamed through it in ranges of rows (a host result, or a GPU one where the first range says
        the whole result takes at most a tenth of the GPU's room; see :mod:`arrowdev.streaming`).

        Nulls give nulls; with ``null_aware=True`` ``f`` sees ``ad.NA`` for them and may return
        ``ad.NA``. The output type is what numba infers, unless ``out_type`` (any Arrow type) says.
        A UDF that returns strings gives a ``string_type`` column: ``"string"``, ``"large_string"``
        or ``"string_view"`` (docs/strings.md). See docs/udf.md.

        >>> import pyarrow as pa, arrowdev as ad
        >>> ad.column(pa.array([1.5, None, 3.0])).apply(lambda x: x * 2 + 1).to_pylist()
        [4.0, None, 7.0]
        >>> ad.column(pa.array(["ab", None, "été"])).apply(lambda s: s.upper() + "!").to_pylist()
        ['AB!', None, 'ÉTÉ!']
        """
        apply_columns = _udf_runner()
        if device is None:  # where the data is: the common case, kept short (engines call it per batch)
            return ArrowColumn(*apply_columns(f, [self], null_aware, out_type, stream, string_type=string_type))
        from .streaming import apply_on_gpu, gpu_for

        def run(columns: list[ArrowColumn]) -> ArrowColumn:
            return ArrowColumn(*apply_columns(f, columns, null_aware, out_type, stream, string_type=string_type))

        gpu = gpu_for(device, self.device)
        return run([self]) if gpu is None else cast(ArrowColumn, apply_on_gpu(run, [self], gpu))

    def rolling(self, window: int, min_periods: int | None = None, center: bool = False) -> Any:
        """Rolling windows of ``window`` rows; ``.apply(f)`` runs ``f`` on each (see
        :class:`arrowdev.udf.Rolling`)."""
        from .udf.run.rolling import Rolling

        # windows cross chunk boundaries: one chunk (a copy)
        whole = self.combine_chunks() if self.num_chunks > 1 else self
        return Rolling(whole, window, min_periods, center, make=ArrowColumn)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, tuple[Any, ...]]:
        """Pickles the rows in range (out of band with protocol 5: zero-copy for CPU data; device data
        goes through host memory and lands on the receiver's GPU). See :mod:`arrowdev.serialize.frames`."""
        from .serialize.frames import reduce

        return reduce(self, operator.index(protocol))

    # ---- array exports (CuPy, numba, PyTorch, NumPy) -------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CAI v3 view of a one-chunk fixed-width GPU column (zero-copy; nulls go in ``mask``)."""
        from .interop.cuda_arrays import cuda_array_interface

        return cuda_array_interface(self)

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        """DLPack view of a one-chunk fixed-width column without nulls (zero-copy)."""
        from .interop.cuda_arrays import dlpack

        return dlpack(self, stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        from .interop.cuda_arrays import dlpack_device

        return dlpack_device(self)

    def to_cupy(self) -> Any:
        """A CuPy array: zero-copy for fixed-width GPU data, an unpacking copy for bool."""
        from .interop.cuda_arrays import to_cupy

        return to_cupy(self)

    # ---- exports -----------------------------------------------------------------------------

    def __arrow_c_schema__(self) -> Any:
        return self._type.__arrow_c_schema__()

    # __arrow_c_device_array__ and __arrow_c_array__ are ColumnCore's (capsules/py_column.c): they export
    # one chunk with no request in one native call, and call these two for everything else.

    def _arrow_c_device_array(self, requested_schema: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        """(schema, device array) capsules; never copies unless a cheap cast is requested (a
        column of several chunks has no ``__arrow_c_device_array__``; called directly, this
        concatenates them, the copy :meth:`combine_chunks` makes). Pinned host memory is exported
        as CPU memory, once its producers are done."""
        check_kwargs(kwargs)
        col = self._as_requested(requested_schema)
        if col.device.is_cpu_readable:
            col = col._on_cpu()
            return array_capsules(col._type, cpu_labelled(col._type, col._one_array()), device=True)
        return array_capsules(col._type, col._one_array(), device=True)

    def _arrow_c_array(self, requested_schema: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        """(schema, array) capsules; device data is copied to host first (C8). Several chunks
        (only when called directly: such a column has no ``__arrow_c_array__``) are concatenated."""
        check_kwargs(kwargs)
        col = self._on_cpu()._as_requested(requested_schema)
        return array_capsules(col._type, col._one_array(), device=False)

    def __arrow_c_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """A stream capsule of the chunks, zero-copy (device data is copied to host first, C8)."""
        check_kwargs(kwargs)
        col = self._on_cpu()._as_requested(requested_schema)
        return stream_capsule(col._type, col._exportable_chunks(), device=False)

    def __arrow_c_device_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """A device stream capsule of the chunks, zero-copy, on the column's device (pinned host
        memory is exported as CPU memory, once its copy is done)."""
        check_kwargs(kwargs)
        col = self._as_requested(requested_schema)
        if col.device.is_cpu_readable:
            col = col._on_cpu()
            chunks = [cpu_labelled(col._type, c) for c in col._exportable_chunks()]
            return stream_capsule(col._type, chunks, device=True)
        return stream_capsule(col._type, col._exportable_chunks(), device=True, device_code=col.device.code)

    _exportable_chunks = _chunked.exportable_chunks
    _ready_chunk = _chunked.ready_chunk

    def _one_array(self) -> Any:
        """The column as one chunk, ready to export (several are concatenated: a copy)."""
        if len(self._chunks) == 1:
            return self._ready_chunk(0)
        from .interop.pyarrow import concatenate

        merged = ArrowColumn(self._type, [concatenate(self._on_cpu())])
        if not self.device.is_cpu_readable:  # concatenated on the host, then back to the device
            merged = merged.to_device(self.device.id)
        return merged._ready_chunk(0)

    def _as_requested(self, requested_schema: Any) -> ArrowColumn:
        if requested_schema is None:
            return self
        target = cheap_target(self._type, requested_schema)
        if target is None or not self.device.is_cpu_readable:
            return self
        from .interop.pyarrow import cast

        return ArrowColumn(*cast(self, target))

    def _on_cpu(self) -> ArrowColumn:
        """This column where the CPU can read it, its data ready: a host copy of device data (C8)."""
        if all(c.device_type == _CPU and not c.sync_event for c in self._chunks):
            return self  # nothing to copy, nothing to wait for
        host = self.to_host()
        _chunked.wait_for_producers(host)
        return host


class _ChunkedColumn(ArrowColumn):
    """An ArrowColumn of several chunks (its class from birth: a column's chunks never change)."""

    __slots__ = ()
    __arrow_c_array__ = StreamOnly()
    __arrow_c_device_array__ = StreamOnly()


_import_from = _capsules.import_from


def column(obj: Any, schema: Any = None) -> ArrowColumn:
    """A column from any Arrow producer, zero-copy: same as :meth:`ArrowColumn.from_arrow`.

    >>> import pyarrow as pa, arrowdev as ad
    >>> ad.column(pa.array([1, None, 3])).to_pylist()
    [1, None, 3]
    """
    if schema is None:  # kept to few steps: an import is often per call (benchmarks/bench_exchange.py)
        found = _import_from(obj, ArrowColumn)  # as _from_arrow.import_from, made a column
        if found.__class__ is ArrowColumn:
            return found
        if isinstance(obj, ArrowColumn):
            return obj
        return ArrowColumn(*read_arrow_after(obj, None, found))
    dtype, arrays = read_arrow(obj, schema)
    return conformed(ArrowColumn(dtype, arrays)._as_requested(schema), DataType.from_arrow(schema))


def conformed(col: ArrowColumn, wanted: DataType) -> ArrowColumn:
    """``col`` as type ``wanted``: itself when it has that type already (the producer honoured the
    requested schema), else cast by PyArrow on the CPU (a copy), as ``pa.chunked_array(obj, type=)``
    and ``pa.table(obj, schema=)`` cast what a producer (Polars, nanoarrow) gives unchanged. Data on a
    GPU is not cast: ValueError."""
    if col.type == wanted:
        return col
    if not col.device.is_cpu_readable:
        raise ValueError(f"schema= asks for {wanted}, the producer gave {col.type} on {col.device.type}, where "
                         "arrowdev does not cast: cast it before, or import it without schema=")
    from .interop.pyarrow import cast

    try:
        return ArrowColumn(*cast(col, wanted))
    except (ValueError, NotImplementedError) as e:  # PyArrow's ArrowInvalid, ArrowNotImplementedError
        what = f"column {col.name!r}" if col.name else "the column"
        raise ValueError(f"schema= asks for {wanted}, the producer gave {col.type}, and PyArrow cannot cast "
                         f"{what} to it: {e}") from e


_chunked.register_maker("column", ArrowColumn)
