"""arrowdev on Dask (the code: ``arrowdev/integrations/dask/``): collections of ArrowTable partitions, serializers for distributed, UDFs inside
``dask.dataframe``. Needs ``pip install arrowdev[dask]`` (dask and distributed; dask-cuda for GPUs).

Importing this module registers arrowdev's types with distributed's serializer families and
``dask.sizeof`` (and dask-cuda's device-object dispatch where installed); see docs/distributed.md.

>>> import pyarrow as pa, arrowdev.dask as add
>>> parts = add.from_map(lambda i: pa.table({"x": [i]}), range(3))
>>> parts.compute(scheduler="sync").column("x").to_pylist()
[0, 1, 2]
"""

from __future__ import annotations

from .integrations.dask import (
    PartitionSizeWarning, PartitionedColumn, PartitionedTable, from_dask_dataframe, from_delayed, from_frame,
    from_map, map_partitions, nbytes, read_parquet, to_frame, udf)

__all__ = [
    "PartitionSizeWarning", "PartitionedColumn", "PartitionedTable", "from_dask_dataframe", "from_delayed",
    "from_frame", "from_map", "map_partitions", "nbytes", "read_parquet", "to_frame", "udf"
]
