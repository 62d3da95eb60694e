"""DataFrame partitions to and from arrowdev tables, and :func:`udf` for ``dask.dataframe``.

pandas partitions with ``pd.ArrowDtype`` columns convert both ways over the same buffers;
NumPy-backed numeric columns without nulls are wrapped by PyArrow without a copy; other columns
are converted by ``pyarrow.Table.from_pandas`` (NaN becomes null, the index is dropped). cuDF
partitions (GPU) go through pylibcudf's Arrow device interface, zero-copy.

>>> import pandas as pd, arrowdev.dask as add
>>> f = add.udf(lambda a, b: a * 10 + b, columns=["a", "b"], out="y")
>>> f(pd.DataFrame({"a": [1, 2], "b": [3, 4]}))["y"].tolist()
[13, 24]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...column import ArrowColumn
from ...table import ArrowTable, table

__all__ = ["from_frame", "to_frame", "udf"]


def _is_cudf(frame: Any) -> bool:
    return type(frame).__module__.split(".", 1)[0] == "cudf"


def from_frame(frame: Any) -> ArrowTable:
    """An ArrowTable over a pandas or cuDF DataFrame partition (see the module docstring)."""
    if isinstance(frame, ArrowTable):
        return frame
    if _is_cudf(frame):
        plc_table, _ = frame.to_pylibcudf()  # GPU: pylibcudf exports __arrow_c_device_array__
        columns = [ArrowColumn.from_arrow(c).rename(str(n)) for c, n in zip(plc_table.columns(), frame.columns)]
        return ArrowTable(columns, len(frame))
    import pyarrow as pa

    return table(pa.Table.from_pandas(frame, preserve_index=False))


def to_frame(tbl: ArrowTable, index: Any = None) -> Any:
    """A pandas DataFrame of ``pd.ArrowDtype`` columns over the table's buffers (CPU data), or a
    cuDF DataFrame over them (GPU data, where cuDF is installed; else a pandas copy on the host)."""
    if not tbl.device.is_cpu_readable:
        try:
            import cudf
            import pylibcudf as plc
        except ImportError:
            pass
        else:
            columns = {name: cudf.Series.from_pylibcudf(plc.Column.from_arrow(col))
                       for name, col in zip(tbl.column_names, tbl.columns)}
            return cudf.DataFrame(columns, index=index)
    import pandas as pd

    frame = tbl.to_pyarrow().to_pandas(types_mapper=pd.ArrowDtype)
    if index is not None:
        frame.index = index
    return frame


def _to_series(col: ArrowColumn, like: Any) -> Any:
    if _is_cudf(like):
        import cudf
        import pylibcudf as plc

        series = cudf.Series.from_pylibcudf(plc.Column.from_arrow(col))
        series.index = like.index
        return series
    import pandas as pd

    return pd.Series(pd.arrays.ArrowExtensionArray(col.to_pyarrow()), index=like.index, copy=False)


class udf:  # noqa: N801 - a function maker, named as users call it
    """``f`` as a function of a DataFrame partition, for ``ddf.map_partitions(add.udf(...))``:
    the partition with column ``out`` added, ``f(a, b, ...)`` row by row over ``columns`` (an arrowdev
    UDF: numba on the CPU for pandas partitions, a CUDA kernel for cuDF ones). ``apply_options`` go
    to :meth:`arrowdev.ArrowTable.apply` (``null_aware``, ``out_type``, ``string_type``)."""

    def __init__(self, f: Callable[..., Any], columns: Iterable[str], out: str, **apply_options: Any) -> None:
        self.f, self.columns, self.out, self.apply_options = f, list(columns), out, apply_options

    def __call__(self, frame: Any) -> Any:
        args = from_frame(frame[self.columns])
        result = args.apply(self.f, columns=self.columns, **self.apply_options)
        return frame.assign(**{self.out: _to_series(result, frame)})

    def __repr__(self) -> str:
        return f"arrowdev.dask.udf({getattr(self.f, '__name__', self.f)!r}, columns={self.columns}, out={self.out!r})"
