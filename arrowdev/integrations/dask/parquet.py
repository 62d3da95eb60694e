"""Parquet in and out of :class:`PartitionedTable`: one partition per row group, one file per partition."""

from __future__ import annotations

import glob
import os
from typing import Any

from ...table import ArrowTable, table
from .collection import PartitionedTable, from_map

__all__ = ["read_parquet", "to_parquet"]


def _files(path: str | list[str]) -> list[str]:
    if isinstance(path, (list, tuple)):
        return [str(p) for p in path]
    path = str(path)
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "*.parquet")))
    found = sorted(glob.glob(path))
    if not found:
        raise FileNotFoundError(f"no Parquet files match {path!r}")
    return found


def _read_row_group(path: str, row_group: int, columns: list[str] | None, device: int | str | None) -> ArrowTable:
    import pyarrow.parquet as pq

    tbl = table(pq.ParquetFile(path).read_row_group(row_group, columns=columns))
    if device is None or device == "cpu":
        return tbl
    if device == "cuda":  # this worker's GPU (dask-cuda gives each worker its own CUDA_VISIBLE_DEVICES)
        from ...gpu import runtime

        device = runtime.cupy().cuda.runtime.getDevice()
    return tbl.to_device(device)


def read_parquet(path: str | list[str], columns: list[str] | None = None,
                 device: int | str | None = None) -> PartitionedTable:
    """A :class:`PartitionedTable` with one partition per row group of the Parquet files at ``path``
    (a file, a glob pattern, a directory of ``*.parquet`` files, or a list of files). ``device``:
    ``None`` / ``"cpu"`` keeps partitions in CPU memory, ``"cuda"`` puts each on its worker's current
    GPU, an int on that GPU. The footers are read here, to count the row groups."""
    import pyarrow.parquet as pq

    if device not in (None, "cpu", "cuda") and not isinstance(device, int):
        raise ValueError(f"expected device None, 'cpu', 'cuda' or a GPU index, got {device!r}")
    pieces = [(f, i) for f in _files(path) for i in range(pq.ParquetFile(f).metadata.num_row_groups)]
    return from_map(_read_row_group, [f for f, _ in pieces], [i for _, i in pieces],
                    [columns] * len(pieces), [device] * len(pieces))


def to_parquet(parts: PartitionedTable, path: str, *, compute: bool = True, **options: Any) -> Any:
    """Writes ``{path}/part.{i}.parquet`` per partition; the paths (a delayed list with ``compute=False``).
    The same as :meth:`PartitionedTable.to_parquet`."""
    return parts.to_parquet(path, compute=compute, **options)
