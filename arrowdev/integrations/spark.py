"""arrowdev UDFs in Spark through ``DataFrame.mapInArrow`` (PySpark >= 3.3).

Spark hands each Python worker an iterator of ``pyarrow.RecordBatch``; :func:`arrow_udf` makes the
function that runs an arrowdev UDF on each batch (zero-copy from Spark's Arrow batches into arrowdev;
numba on the CPU, or a CUDA kernel with ``device="cuda"`` on executors with a GPU), and
:func:`with_column` declares the output schema::

    out = arrowdev.spark.with_column(df, f, columns=["a", "b"], out="y", out_type="double")
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .batches import AppendUDF

__all__ = ["arrow_udf", "with_column"]


def arrow_udf(f: Callable[..., Any], columns: Iterable[str], out: str, *, device: str = "cpu",
              **apply_options: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function for ``df.mapInArrow``: each record batch with column ``out`` appended,
    ``f(a, b, ...)`` row by row over ``columns`` (see :class:`arrowdev.integrations.batches.AppendUDF`)."""
    per_batch = AppendUDF(f, columns, out, device=device, **apply_options)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return map(per_batch, batches)
    return run


def with_column(df: Any, f: Callable[..., Any], columns: Iterable[str], out: str, out_type: str, *,
                device: str = "cpu", **apply_options: Any) -> Any:
    """``df`` with column ``out`` (Spark type ``out_type``, e.g. ``"double"``), computed by an arrowdev
    UDF over ``columns`` in ``mapInArrow``."""
    schema = copy.deepcopy(df.schema).add(out, out_type)  # StructType.add changes the schema in place
    return df.mapInArrow(arrow_udf(f, columns, out, device=device, **apply_options), schema)
