"""arrowdev on Dask, the code behind the public module :mod:`arrowdev.dask` (its docstring is the
user's guide): ``collection`` (PartitionedTable / PartitionedColumn), ``frames`` (dask.dataframe
partitions), ``parquet``, and ``_distributed`` (the serializers, registered on import)."""


from __future__ import annotations

from typing import Any

from . import _distributed  # noqa: F401  (registers the serializers)
from ._distributed import nbytes
from .collection import PartitionedColumn, PartitionedTable, from_delayed, from_map, map_partitions
from .dataframes import from_frame, to_frame, udf
from .parquet import read_parquet
from .partitions import PartitionSizeWarning

__all__ = ["PartitionSizeWarning", "PartitionedColumn", "PartitionedTable", "from_dask_dataframe", "from_delayed", "from_frame",
           "from_map", "map_partitions", "nbytes", "read_parquet", "to_frame", "udf"]


def from_dask_dataframe(ddf: Any) -> PartitionedTable:
    """A :class:`PartitionedTable` over a ``dask.dataframe`` (pandas or cuDF partitions), partition for
    partition (see :func:`from_frame` for what is zero-copy)."""
    return from_delayed(ddf.to_delayed(), convert=from_frame)
