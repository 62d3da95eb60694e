"""What the engine hosts share: a UDF over a host's Arrow batch, appended to it as a new column. Ray Data
(:mod:`.ray`) and Spark (:mod:`.spark`) hand a function pyarrow batches; each host module wraps this one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..table import ArrowTable, table

__all__ = ["AppendUDF"]


class AppendUDF:
    """A function of a ``pyarrow.Table`` (or ``RecordBatch``) batch: the batch with column ``out`` appended,
    ``f(a, b, ...)``
    row by row over ``columns`` as :meth:`arrowdev.ArrowTable.apply` computes it (``apply_options``:
    ``null_aware``, ``out_type``, ``string_type``). ``device="cuda"`` runs it on the task's GPU
    (give the task ``num_gpus``): the batch's columns are copied there and the result back."""

    def __init__(self, f: Callable[..., Any], columns: Iterable[str], out: str, *, device: str = "cpu",
                 **apply_options: Any) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"expected device 'cpu' or 'cuda', got {device!r}")
        self.f, self.columns, self.out = f, list(columns), out
        self.device, self.apply_options = device, apply_options

    def __call__(self, batch: Any) -> Any:
        args: ArrowTable = table(batch).select(self.columns)
        if self.device == "cuda":
            args = args.to_device()
        values = args.apply(self.f, columns=self.columns, **self.apply_options).to_pyarrow()
        if not hasattr(batch, "num_chunks"):  # a RecordBatch takes one array
            values = values.combine_chunks()
        return batch.append_column(self.out, values)
