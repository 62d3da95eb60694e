"""Dask collections of arrowdev partitions: :class:`PartitionedTable` (ArrowTable partitions) and
:class:`PartitionedColumn` (ArrowColumn partitions), built on Dask's documented collection protocol
(``__dask_graph__``, ``__dask_keys__``, ``__dask_postcompute__``, ``__dask_postpersist__`` with
``dask.base.DaskMethodsMixin`` for ``compute`` / ``persist``) over a ``HighLevelGraph`` of
``dask.task_spec`` tasks, one task per partition, as ``dask.bag`` does.

>>> import pyarrow as pa, arrowdev.dask as add
>>> parts = add.from_map(lambda i: pa.table({"x": [i, i + 1]}), [0, 10, 20])
>>> parts
PartitionedTable<lambda, npartitions=3>
>>> doubled = parts.map_partitions(lambda t: t.append_column("y", t.apply(lambda x: x * 2, columns=["x"])))
>>> tbl = doubled.compute(scheduler="sync")
>>> tbl.column("y").to_pylist(), tbl.column("y").num_chunks
([0, 2, 20, 22, 40, 42], 3)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import dask
from dask.base import DaskMethodsMixin, tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import Task, TaskRef
from dask.utils import funcname

from ...core import chunks as _chunked
from ...column import ArrowColumn
from ...table import ArrowTable, table

__all__ = ["PartitionedColumn", "PartitionedTable", "from_delayed", "from_map", "map_partitions"]


class _Partitioned(DaskMethodsMixin):
    """One task per partition, keys ``(name, i)``."""

    __slots__ = ("dask", "name", "npartitions")

    def __init__(self, graph: HighLevelGraph, name: str, npartitions: int) -> None:
        self.dask, self.name, self.npartitions = graph, name, npartitions

    # ---- Dask's collection protocol -------------------------------------------------------------

    def __dask_graph__(self) -> HighLevelGraph:
        return self.dask

    def __dask_keys__(self) -> list[tuple[str, int]]:
        return [(self.name, i) for i in range(self.npartitions)]

    def __dask_layers__(self) -> tuple[str, ...]:
        return (self.name,)

    def __dask_tokenize__(self) -> str:
        return self.name

    @staticmethod
    def __dask_optimize__(graph: Any, keys: Any, **kwargs: Any) -> Any:
        """The tasks the keys need, each chain of partition-wise steps (read, then map_partitions, ...) fused
        into one task (as dask.array and dask.bag fuse theirs): a partition's intermediate tables are never
        stored, sized or scheduled on their own. ``optimization.fuse.active = False`` in Dask's config keeps them
        apart."""
        from dask.core import flatten

        wanted = list(flatten(keys))
        culled = graph.cull(set(wanted)) if isinstance(graph, HighLevelGraph) else graph
        try:  # what dask.bag and dask.array fuse with (not exported by Dask: without it, nothing is fused)
            from dask._task_spec import convert_legacy_graph, fuse_linear_task_spec
        except ImportError:
            return culled
        if dask.config.get("optimization.fuse.active") is False:
            return culled
        return fuse_linear_task_spec(convert_legacy_graph(dict(culled)), wanted)  # persisted parts: futures

    __dask_scheduler__ = staticmethod(dask.threaded.get)

    def __dask_postpersist__(self) -> tuple[Callable[..., Any], tuple]:
        return self._rebuild, ()

    def _rebuild(self, graph: Any, *, rename: dict[str, str] | None = None) -> _Partitioned:
        name = rename.get(self.name, self.name) if rename else self.name
        return type(self)(graph, name, self.npartitions)

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.name.rsplit('-', 1)[0]}, npartitions={self.npartitions}>"

    # ---- operations -----------------------------------------------------------------------------

    def map_partitions(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(partition, *args, **kwargs)`` for every partition: a collection of the same kind.
        Other collections among ``args`` with as many partitions are passed partition by partition.
        What ``func`` returns is made an ArrowTable (or ArrowColumn) with :func:`arrowdev.table`
        (:func:`arrowdev.column`), zero-copy."""
        return map_partitions(func, self, *args, output=type(self), **kwargs)

    def to_delayed(self, optimize_graph: bool = True) -> list[Any]:
        """One ``dask.delayed`` object per partition; with ``optimize_graph`` (as dask.dataframe's) over the
        optimized graph: each partition's chain of steps one task."""
        from dask.delayed import Delayed

        keys = self.__dask_keys__()
        if not optimize_graph:
            return [Delayed(key, self.dask, layer=self.name) for key in keys]
        graph = HighLevelGraph.from_collections(self.name, self.__dask_optimize__(self.dask, keys), dependencies=())
        return [Delayed(key, graph, layer=self.name) for key in keys]


class PartitionedTable(_Partitioned):
    """A Dask collection of :class:`arrowdev.ArrowTable` partitions with one schema.

    ``compute()`` gives one host ArrowTable, one chunk per partition; ``persist()`` keeps the
    partitions where they are (on the workers' GPUs for device partitions).
    """

    __slots__ = ()

    def __dask_postcompute__(self) -> tuple[Callable[..., Any], tuple]:
        return concat_tables, ()

    def apply(self, f: Callable[..., Any], columns: Iterable[int | str] | None = None, *, null_aware: bool = False,
              out_type: Any = None, string_type: str = "string") -> PartitionedColumn:
        """``f(a, b, ...)`` row by row in every partition, as :meth:`arrowdev.ArrowTable.apply`
        (a CUDA kernel on GPU partitions, numba's CPU target otherwise)."""
        columns = None if columns is None else list(columns)
        return map_partitions(_apply_table, self, f, columns, null_aware, out_type, string_type,
                              output=PartitionedColumn, token="apply")

    def append_column(self, name: str, column: PartitionedColumn) -> PartitionedTable:
        """Every partition with one more column, from a collection of as many column partitions."""
        return map_partitions(_append_column, self, name, column, output=PartitionedTable, token="append-column")

    def select(self, keys: Iterable[int | str]) -> PartitionedTable:
        return map_partitions(ArrowTable.select, self, list(keys), output=PartitionedTable, token="select")

    def to_dask_dataframe(self, meta: Any = None) -> Any:
        """A ``dask.dataframe`` whose partitions are pandas DataFrames with ``pd.ArrowDtype``
        columns over the same buffers (zero-copy for CPU partitions); GPU partitions become cuDF
        DataFrames where cuDF is installed. ``meta`` as dask.dataframe.from_delayed takes it."""
        import dask.dataframe as dd

        from .dataframes import to_frame

        parts = [dask.delayed(to_frame)(p) for p in self.to_delayed()]
        return dd.from_delayed(parts, meta=meta, verify_meta=False)

    def to_parquet(self, path: str, *, compute: bool = True, **write_options: Any) -> Any:
        """One Parquet file per partition, ``{path}/part.{i}.parquet`` (``pyarrow.parquet.write_table``
        options pass through); the list of files written, or a delayed one with ``compute=False``.
        (Here rather than in :mod:`arrowdev.integrations.dask.parquet`, which imports this module.)"""
        os.makedirs(path, exist_ok=True)
        written = [dask.delayed(_write_parquet)(p, os.path.join(path, f"part.{i}.parquet"), write_options)
                   for i, p in enumerate(self.to_delayed())]
        out = dask.delayed(list)(written)
        return out.compute() if compute else out


class PartitionedColumn(_Partitioned):
    """A Dask collection of :class:`arrowdev.ArrowColumn` partitions of one type; ``compute()`` gives
    one host ArrowColumn, one chunk per partition."""

    __slots__ = ()

    def __dask_postcompute__(self) -> tuple[Callable[..., Any], tuple]:
        return concat_columns, ()

    def apply(self, f: Callable[..., Any], *, null_aware: bool = False, out_type: Any = None,
              string_type: str = "string") -> PartitionedColumn:
        """``f(x)`` for every row of every partition, as :meth:`arrowdev.ArrowColumn.apply`."""
        return map_partitions(_apply_column, self, f, null_aware, out_type, string_type,
                              output=PartitionedColumn, token="apply")


def _apply_table(tbl: ArrowTable, f: Any, columns: Any, null_aware: bool, out_type: Any, string_type: str) -> Any:
    return tbl.apply(f, columns=columns, null_aware=null_aware, out_type=out_type, string_type=string_type)


def _apply_column(col: ArrowColumn, f: Any, null_aware: bool, out_type: Any, string_type: str) -> Any:
    return col.apply(f, null_aware=null_aware, out_type=out_type, string_type=string_type)


def _append_column(tbl: ArrowTable, name: str, col: ArrowColumn) -> ArrowTable:
    return tbl.append_column(name, col)


def _write_parquet(tbl: ArrowTable, path: str, options: dict[str, Any]) -> str:
    import pyarrow.parquet as pq

    pq.write_table(tbl.to_pyarrow(), path, **options)
    return path


# ---- building collections ---------------------------------------------------------------------------


def _as_output(output: type, value: Any) -> Any:
    """A partition as the collection's kind (zero-copy from any Arrow producer)."""
    if output is PartitionedColumn:
        return value if isinstance(value, ArrowColumn) else ArrowColumn.from_arrow(value)
    return value if isinstance(value, ArrowTable) else table(value)


def _call(output: type, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return _as_output(output, func(*args, **kwargs))


def map_partitions(func: Callable[..., Any], *args: Any, output: type = PartitionedTable, token: str | None = None,
                   **kwargs: Any) -> Any:
    """``func`` applied partition by partition over the collections among ``args`` (all with the same
    number of partitions; other arguments are passed as they are): a collection of kind ``output``."""
    collections = [a for a in args if isinstance(a, _Partitioned)]
    if not collections:
        raise TypeError("expected at least one PartitionedTable or PartitionedColumn argument, got none")
    counts = {c.npartitions for c in collections}
    if len(counts) > 1:
        raise ValueError(f"expected collections with one number of partitions, got {sorted(counts)}")
    n = counts.pop()
    name = f"{token or funcname(func)}-{tokenize(func, output.__name__, *args, **kwargs)}"
    layer = {}
    for i in range(n):
        task_args = [TaskRef((a.name, i)) if isinstance(a, _Partitioned) else a for a in args]
        layer[(name, i)] = Task((name, i), _call, output, func, *task_args, **kwargs)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=collections)
    return output(graph, name, n)


def from_map(func: Callable[..., Any], *iterables: Iterable[Any], output: type = PartitionedTable,
             **kwargs: Any) -> Any:
    """One partition per item: ``func(*items, **kwargs)`` for the items of ``iterables`` taken
    together (as ``map``), each result made an ArrowTable (an ArrowColumn with
    ``output=PartitionedColumn``) zero-copy."""
    items = list(zip(*iterables))
    name = f"{funcname(func)}-{tokenize(func, output.__name__, items, **kwargs)}"
    layer = {(name, i): Task((name, i), _call, output, func, *item, **kwargs) for i, item in enumerate(items)}
    return output(HighLevelGraph.from_collections(name, layer, dependencies=[]), name, len(items))


def from_delayed(parts: Sequence[Any], convert: Callable[[Any], Any] | None = None,
                 output: type = PartitionedTable) -> Any:
    """One partition per ``dask.delayed`` object (``convert`` applied to each value first)."""
    convert = convert or (lambda value: value)
    name = f"from-delayed-{tokenize(*parts, convert, output.__name__)}"
    layer = {(name, i): Task((name, i), _call, output, convert, TaskRef(p.key)) for i, p in enumerate(parts)}
    return output(HighLevelGraph.from_collections(name, layer, dependencies=list(parts)), name, len(parts))


# ---- finishing --------------------------------------------------------------------------------------


def _host_parts(parts: list[Any]) -> list[Any]:
    """The partitions where the CPU reads them, all in one kind of host memory: device partitions are
    copied to pinned host memory, or (when CPU partitions are among them) on to plain CPU memory."""
    if all(p.device.type == "cpu" for p in parts):
        return parts
    hosted = [p.to_host() for p in parts]
    if all(p.device.type != "cpu" for p in parts) and len({p.device for p in hosted}) == 1:
        return hosted
    from ...cuda import copy_columns
    from ...core.types import Device

    out = []
    for p in hosted:  # a host-to-host copy waits for the device-to-host copies' events
        if isinstance(p, ArrowColumn):
            out.append(copy_columns([p], Device.cpu())[0])
        else:
            out.append(ArrowTable.from_struct_array(copy_columns([p.to_struct_array()], Device.cpu())[0]))
    return out


def concat_tables(parts: Sequence[ArrowTable]) -> ArrowTable:
    """One host ArrowTable whose record batches are the partitions' (zero-copy for CPU partitions)."""
    parts = _host_parts(list(parts))
    if not parts:
        return table({})
    schema = parts[0].schema
    for i, p in enumerate(parts):
        if p.schema != schema:
            raise ValueError(f"expected partitions of one schema, got {schema} in partition 0 and {p.schema} in {i}")
    batches = [b for p in parts for b in _chunked.chunks(p.to_struct_array())]
    return ArrowTable.from_struct_array(ArrowColumn(schema, batches))


def concat_columns(parts: Sequence[ArrowColumn]) -> ArrowColumn:
    """One host ArrowColumn whose chunks are the partitions' (zero-copy for CPU partitions)."""
    parts = _host_parts(list(parts))
    if not parts:
        raise ValueError("expected at least one partition to concatenate, got none")
    dtype = parts[0].type
    for i, p in enumerate(parts):
        if p.type != dtype:
            raise ValueError(f"expected partitions of one type, got {dtype} in partition 0 and {p.type} in {i}")
    return ArrowColumn(dtype, [c for p in parts for c in _chunked.chunks(p)])
