"""arrowdev on Dask: collections of ArrowTable partitions, serializers for distributed, UDFs inside
``dask.dataframe``. Needs ``pip install arrowdev[dask]`` (dask and distributed; dask-cuda for GPUs).

Importing this module registers arrowdev's types with distributed's serializer families and
``dask.sizeof`` (and dask-cuda's device-object dispatch where installed); see docs/distributed.md.

>>> import pyarrow as pa, arrowdev.dask as add
>>> parts = add.from_map(lambda i: pa.table({"x": [i]}), range(3))
>>> parts.compute(scheduler="sync").column("x").to_pylist()
[0, 1, 2]
"""

from __future__ import annotations

from typing import Any

from . import _distributed  # noqa: F401  (registers the serializers)
from ._distributed import nbytes
from .collection import PartitionedColumn, PartitionedTable, from_delayed, from_map, map_partitions
from .frames import from_frame, to_frame, udf
from .parquet import read_parquet
from .partitions import PartitionSizeWarning

__all__ = ["PartitionSizeWarning", "PartitionedColumn", "PartitionedTable", "from_dask_dataframe", "from_delayed", "from_frame",
           "from_map", "map_partitions", "nbytes", "read_parquet", "to_frame", "udf"]


def from_dask_dataframe(ddf: Any) -> PartitionedTable:
    """A :class:`PartitionedTable` over a ``dask.dataframe`` (pandas or cuDF partitions), partition for
    partition (see :func:`from_frame` for what is zero-copy)."""
    return from_delayed(ddf.to_delayed(), convert=from_frame)
