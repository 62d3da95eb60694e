"""arrowdev on Ray: tables through Ray's object store, and arrowdev UDFs in Ray Data.

``ray.put(tbl)`` needs nothing from here: arrowdev's columns and tables pickle with protocol 5 and
out-of-band buffers (arrowdev.serialize.frames), so Ray's object store holds the buffers of the rows in range
and ``ray.get`` on the same node rebuilds the table over the store's shared memory, zero-copy (read-only,
as Ray gives it). Device tables travel through host memory and land on the getter's current GPU.

For Ray Data, :func:`batch_udf` makes the function for ``Dataset.map_batches(..., batch_format="pyarrow")``::

    ds = ray.data.read_parquet(path)
    ds = ds.map_batches(arrowdev.ray.batch_udf(f, columns=["a", "b"], out="y", device="cuda"),
                        batch_format="pyarrow", num_gpus=1)
"""

from __future__ import annotations

from .batches import AppendUDF

__all__ = ["batch_udf"]


class batch_udf(AppendUDF):  # noqa: N801 - a function maker, named as users call it
    """A function of a ``pyarrow.Table`` (or ``RecordBatch``) batch for ``Dataset.map_batches(...,
    batch_format="pyarrow")``: the batch with column ``out`` appended, ``f(a, b, ...)`` row by row over
    ``columns`` as :meth:`arrowdev.ArrowTable.apply` computes it (``apply_options``: ``null_aware``,
    ``out_type``, ``string_type``). ``device="cuda"`` runs it on the task's GPU (give the task
    ``num_gpus``): the batch's columns are copied there and the result back."""
