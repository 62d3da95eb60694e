"""What the engine hosts share: a UDF over a host's Arrow batch, appended to it as a new column. Ray Data
(:mod:`.ray`) and Spark (:mod:`.spark`) hand a function pyarrow batches; each host module wraps this one.

The rules both follow (docs/distributed.md, "Ray and Spark"):

- ``columns`` is a list of column names; a single string is one column (``"ab"`` is the column ``ab``, not
  ``a`` and ``b``).
- ``out`` is a new column: a batch that already has a column of that name is refused (``ValueError``), never
  given a second one (a duplicate name breaks Spark's schema and Ray's rows) nor replaced silently.
- ``result_type``, where the host declares the output's type (Spark's schema), is what the batch gets: the
  UDF's result is cast to it with PyArrow's safe cast, or refused with an error naming the column and both
  types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from ..table import ArrowTable, table

__all__ = ["AppendUDF", "cast_result", "check_new_column", "column_names"]


def column_names(columns: str | Iterable[str]) -> list[str]:
    """``columns`` as a list: one string is one column name."""
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, bytes) or not isinstance(columns, Iterable):
        raise TypeError(f"expected columns as a column name or a list of column names, got {columns!r}")
    names = list(columns)
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise TypeError(f"expected column names (str) in columns, got {bad[0]!r} in {names!r}")
    return names


def check_new_column(out: str, existing: Sequence[str], where: str = "the batch") -> None:
    """Refuse ``out`` if ``where`` (the batch, or a DataFrame) already has a column of that name."""
    if out in existing:
        raise ValueError(
            f"{where} already has a column {out!r} (columns: {list(existing)}); the UDF's result is "
            f"appended as a new column, and a second {out!r} would break Spark's schema and Ray's rows: "
            f"pass another out= name, or drop {out!r} first")


def cast_result(values: Any, result_type: pa.DataType, out: str) -> Any:
    """``values`` as ``result_type``: unchanged if they are of that type, else PyArrow's safe cast (no
    overflow, no truncation); an error naming column ``out`` and both types when it cannot be made."""
    if values.type == result_type:
        return values
    try:
        return values.cast(result_type, safe=True)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        error = TypeError if isinstance(e, pa.ArrowNotImplementedError) else ValueError
        raise error(
            f"the UDF's result for column {out!r} is {values.type}, but the column is declared "
            f"{result_type}, and PyArrow cannot cast it safely ({e}); make the UDF return "
            f"{result_type} values (arrowdev's apply option out_type: udf_out_type= in "
            f"arrowdev.spark.with_column), or declare the column's type as {values.type}") from e


class AppendUDF:
    """A function of a ``pyarrow.Table`` (or ``RecordBatch``) batch: the batch with the new column ``out``
    appended, ``f(a, b, ...)`` row by row over ``columns`` (a name or a list of names) as
    :meth:`arrowdev.ArrowTable.apply` computes it (``apply_options``: ``null_aware``, ``out_type``,
    ``string_type``). ``device="cuda"`` runs it on the task's GPU (give the task ``num_gpus``): the batch's
    columns are copied there and the result back. ``result_type`` (a ``pyarrow.DataType``): the type the
    host declared for ``out``; the result is cast to it (:func:`cast_result`)."""

    def __init__(self, f: Callable[..., Any], columns: str | Iterable[str], out: str, *, device: str = "cpu",
                 result_type: pa.DataType | None = None, **apply_options: Any) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"expected device 'cpu' or 'cuda', got {device!r}")
        if not isinstance(out, str):
            raise TypeError(f"expected out as the new column's name (str), got {out!r}")
        if result_type is not None and not isinstance(result_type, pa.DataType):
            raise TypeError(f"expected result_type as a pyarrow.DataType or None, got {result_type!r}")
        self.f, self.columns, self.out = f, column_names(columns), out
        self.device, self.result_type, self.apply_options = device, result_type, apply_options

    def values(self, batch: Any) -> Any:
        """The UDF's result over ``batch`` (an Arrow table or batch holding ``columns``), as a
        ``pyarrow.ChunkedArray`` of ``result_type`` where one is declared."""
        args: ArrowTable = table(batch).select(self.columns)
        if self.device == "cuda":
            args = args.to_device()
        values = args.apply(self.f, columns=self.columns, **self.apply_options).to_pyarrow()
        return values if self.result_type is None else cast_result(values, self.result_type, self.out)

    def __call__(self, batch: Any) -> Any:
        check_new_column(self.out, batch.schema.names)
        values = self.values(batch)
        if not hasattr(batch, "num_chunks"):  # a RecordBatch takes one array
            values = values.combine_chunks()
        return batch.append_column(self.out, values)
