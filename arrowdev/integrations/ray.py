"""arrowdev on Ray: tables through Ray's object store, and arrowdev UDFs in Ray Data.

``ray.put(tbl)`` needs nothing from here: arrowdev's columns and tables pickle with protocol 5 and
out-of-band buffers (arrowdev.serialize.frames), so Ray's object store holds the buffers of the rows in range
and ``ray.get`` on the same node rebuilds the table over the store's shared memory, zero-copy (read-only,
as Ray gives it). Device tables travel through host memory and land on the getter's current GPU.

For Ray Data, :func:`batch_udf` makes the function for ``Dataset.map_batches``; ``batch_format="pyarrow"``
hands it Arrow batches as they are (zero-copy into arrowdev)::

    ds = ray.data.read_parquet(path)
    ds = ds.map_batches(arrowdev.ray.batch_udf(f, columns=["a", "b"], out="y", device="cuda"),
                        batch_format="pyarrow", num_gpus=1)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from .batches import AppendUDF, check_new_column

__all__ = ["batch_udf"]


class batch_udf(AppendUDF):  # noqa: N801 - a function maker, named as users call it
    """A function of a Ray Data batch for ``Dataset.map_batches``: the batch with the new column ``out``
    appended, ``f(a, b, ...)`` row by row over ``columns`` (a name or a list of names) as
    :meth:`arrowdev.ArrowTable.apply` computes it (``apply_options``: ``null_aware``, ``out_type``,
    ``string_type``). ``device="cuda"`` runs it on the task's GPU (give the task ``num_gpus``): the batch's
    columns are copied there and the result back.

    Every batch format of Ray Data is taken, and the batch comes back in its own format:

    - ``batch_format="pyarrow"`` (``pyarrow.Table``): zero-copy into arrowdev; the one to use.
    - ``"numpy"`` (Ray's default; a dict of NumPy arrays): the ``columns`` are made Arrow arrays (NaN stays
      a value, ``None`` in an object array is a null); the result is added as a NumPy array, as
      ``pyarrow``'s ``to_numpy`` gives it (an integer result with nulls becomes float64 with NaN).
    - ``"pandas"`` (a ``pandas.DataFrame``): the ``columns`` through ``pyarrow.Table.from_pandas`` (NaN and
      ``None`` are nulls); the result as ``to_pandas`` gives it, on the frame's index.

    A batch that already has a column ``out`` is refused (``ValueError``)."""

    def __call__(self, batch: Any) -> Any:
        if isinstance(batch, (pa.Table, pa.RecordBatch)):
            return super().__call__(batch)
        if isinstance(batch, Mapping):
            return self._numpy_batch(batch)
        pandas = sys.modules.get("pandas")  # a DataFrame implies pandas is imported
        if pandas is not None and isinstance(batch, pandas.DataFrame):
            return self._pandas_batch(batch)
        raise TypeError(
            f"expected a Ray Data batch: a pyarrow.Table (map_batches(..., batch_format='pyarrow'), "
            f"zero-copy), a dict of NumPy arrays (batch_format='numpy') or a pandas.DataFrame "
            f"(batch_format='pandas'), got {type(batch).__module__}.{type(batch).__qualname__}")

    def _numpy_batch(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        check_new_column(self.out, list(batch))
        missing = [c for c in self.columns if c not in batch]
        if missing:
            raise KeyError(f"column {missing[0]!r} is not in the batch (columns: {list(batch)})")
        args = pa.table({c: _arrow_array(batch[c], c) for c in self.columns})
        result = dict(batch)
        result[self.out] = self.values(args).to_numpy(zero_copy_only=False)
        return result

    def _pandas_batch(self, frame: Any) -> Any:
        check_new_column(self.out, list(frame.columns))
        args = pa.Table.from_pandas(frame[self.columns], preserve_index=False)
        values = self.values(args).to_pandas()
        values.index = frame.index
        return frame.assign(**{self.out: values})


def _arrow_array(values: Any, name: str) -> pa.Array:
    """A column of Ray's NumPy batch format as an Arrow array: one value per row."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise TypeError(f"column {name!r} of the batch is a {array.ndim}-D array (shape {array.shape}); "
                        f"arrowdev UDFs take one value per row: pass 1-D columns, or use "
                        f"batch_format='pyarrow'")
    return pa.array(array)
