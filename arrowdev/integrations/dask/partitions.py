"""How :func:`arrowdev.dask.read_parquet` cuts Parquet files into partitions (docs/distributed.md, "Partition
sizes").

The rule, in bytes of the columns read (Parquet's uncompressed size of those column chunks, from the footers):

- **a floor against Dask's overhead**: a task should carry at least :data:`MIN_TASK_SECONDS` (50 ms) of work,
  about eight times Dask's own round trip of a task (:data:`DASK_ROUND_TRIP_SECONDS`, 6 ms measured on the H100
  machine, docs/distributed.md), so that Dask's share stays near a tenth. At the rate a job of a few UDFs goes
  through a partition (:data:`WORK_BYTES_PER_SECOND`: 20 GB/s on a GPU, 1 GB/s on a CPU core) that is
  :func:`min_partition_bytes`: 1 GB on a GPU, 50 MB on a CPU;
- **a ceiling from memory**: a worker holds about :data:`PARTITIONS_IN_FLIGHT` (4) partitions at once (the one
  being computed, results its dependents have not used yet, the next one read), each with a working set of
  ``working_set`` times its input (the UDFs' outputs and temporaries; 4 by default): :func:`max_partition_bytes`
  = the worker's memory / 16 (a GPU's memory with one worker a GPU; a CPU worker's memory limit);
- **balance**: at least two partitions a worker where the data allows it;

:func:`target_partition_bytes` = ``min(ceiling, max(floor, total / (2 * workers)))``; the ceiling wins where a
small GPU puts it under the floor. :func:`plan` then walks the row groups in order: row groups are merged into a
partition while they fit the target, and a row group larger than the target is cut into equal row ranges.

A user's ``partition_bytes`` / ``rows_per_partition`` replaces the target; when it makes the partitions smaller
than the floor (and more than one), :func:`warn_if_overhead_bound` raises a :class:`PartitionSizeWarning`.

>>> groups = [RowGroup("a.parquet", i, rows=1000, nbytes=8000) for i in range(3)]
>>> [[(p.index, p.start, p.stop) for p in part] for part in plan(groups, target_bytes=16000)]
[[(0, 0, 1000), (1, 0, 1000)], [(2, 0, 1000)]]
>>> [[(p.index, p.start, p.stop) for p in part] for part in plan(groups[:1], target_rows=400)]
[[(0, 0, 333)], [(0, 333, 667)], [(0, 667, 1000)]]
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["DASK_ROUND_TRIP_SECONDS", "MIN_TASK_SECONDS", "PARTITIONS_IN_FLIGHT", "PartitionSizeWarning", "Piece",
           "RowGroup", "WORK_BYTES_PER_SECOND", "max_partition_bytes", "min_partition_bytes", "plan",
           "target_partition_bytes", "warn_if_overhead_bound"]

DASK_ROUND_TRIP_SECONDS = 0.006
"""distributed's own cost of a task, submitted to done (docs/distributed.md, "Whose the round trip is")."""
MIN_TASK_SECONDS = 0.05
"""The least work a task should carry: Dask's round trip then costs about a tenth of it."""
WORK_BYTES_PER_SECOND = {"gpu": 20e9, "cpu": 1e9}
"""Bytes of input a job of a few UDFs goes through per second: on a GPU several passes at a fraction of the
memory bandwidth (numeric UDFs run at hundreds of GB/s, new strings at tens: docs/udf.md, docs/strings.md); on a
CPU core, numba's compiled loops."""
PARTITIONS_IN_FLIGHT = 4
DEFAULT_WORKING_SET = 4.0


class PartitionSizeWarning(UserWarning):
    """Partitions chosen so small that Dask's fixed cost of a task outweighs the work in it."""


class RowGroup(NamedTuple):
    """One row group of a Parquet file: its rows and the bytes of the columns read."""

    path: str
    index: int
    rows: int
    nbytes: int


class Piece(NamedTuple):
    """Rows ``start:stop`` of row group ``index`` of ``path``."""

    path: str
    index: int
    start: int
    stop: int


def min_partition_bytes(on_gpu: bool) -> int:
    """The floor: the bytes a task needs to carry :data:`MIN_TASK_SECONDS` of work."""
    return int(MIN_TASK_SECONDS * WORK_BYTES_PER_SECOND["gpu" if on_gpu else "cpu"])


def max_partition_bytes(memory_bytes: int, working_set: float = DEFAULT_WORKING_SET) -> int:
    """The ceiling: a worker's memory over the partitions it holds at once times their working set."""
    if working_set <= 0:
        raise ValueError(f"expected a working set > 0 (times a partition's input bytes), got {working_set!r}")
    return max(1, int(memory_bytes / (PARTITIONS_IN_FLIGHT * working_set)))


def target_partition_bytes(total_bytes: int, memory_bytes: int, workers: int, on_gpu: bool,
                           working_set: float = DEFAULT_WORKING_SET) -> int:
    """Bytes a partition should hold: ``min(ceiling, max(floor, total / (2 * workers)))`` (module docstring).

    >>> target_partition_bytes(17 * 10**9, 80 * 2**30, workers=4, on_gpu=True)  # 17 GB on 4 x 80 GiB: balance
    2125000000
    >>> target_partition_bytes(17 * 10**9, 80 * 2**30, workers=1, on_gpu=True)  # one GPU: its memory / 16
    5368709120
    >>> target_partition_bytes(10**6, 80 * 2**30, workers=4, on_gpu=True)       # little data: the floor
    1000000000
    """
    balance = math.ceil(total_bytes / (2 * max(1, workers)))
    return max(1, min(max_partition_bytes(memory_bytes, working_set), max(min_partition_bytes(on_gpu), balance)))


def _cut(rows: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` row ranges of ``rows`` rows, as equal as can be."""
    bounds = [round(rows * i / parts) for i in range(parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def plan(row_groups: Sequence[RowGroup], *, target_bytes: int | None = None,
         target_rows: int | None = None) -> list[tuple[Piece, ...]]:
    """The partitions, each a tuple of pieces, for a target size in bytes or rows (exactly one): row groups in
    order, merged while the partition stays within the target, one larger than the target cut into
    ``ceil(size / target)`` equal row ranges."""
    if (target_bytes is None) == (target_rows is None):
        raise ValueError("expected exactly one of target_bytes and target_rows")
    target = target_bytes if target_bytes is not None else target_rows
    if not isinstance(target, int) or isinstance(target, bool) or target <= 0:
        raise ValueError(f"expected a target size of at least 1, got {target!r}")
    partitions: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    filled = 0
    for group in row_groups:
        size = group.nbytes if target_bytes is not None else group.rows
        if size > target:
            if current:
                partitions.append(tuple(current))
                current, filled = [], 0
            partitions.extend((Piece(group.path, group.index, a, b),)
                              for a, b in _cut(group.rows, math.ceil(size / target)))
            continue
        if current and filled + size > target:
            partitions.append(tuple(current))
            current, filled = [], 0
        current.append(Piece(group.path, group.index, 0, group.rows))
        filled += size
    if current:
        partitions.append(tuple(current))
    return partitions


def partition_sizes(partitions: Sequence[tuple[Piece, ...]], row_groups: Sequence[RowGroup]) -> list[tuple[int, int]]:
    """(rows, bytes) of each partition, a row range's bytes in proportion to its rows."""
    groups = {(g.path, g.index): g for g in row_groups}
    out = []
    for part in partitions:
        rows = sum(p.stop - p.start for p in part)
        nbytes = sum(groups[p.path, p.index].nbytes * (p.stop - p.start) // max(1, groups[p.path, p.index].rows)
                     for p in part)
        out.append((rows, nbytes))
    return out


def warn_if_overhead_bound(sizes: Sequence[tuple[int, int]], on_gpu: bool, auto_bytes: int,
                           stacklevel: int = 3) -> bool:
    """A :class:`PartitionSizeWarning` (and True) when the partitions (``(rows, bytes)`` each; more than one)
    are smaller than :func:`min_partition_bytes`: their tasks would spend more time in Dask than in work."""
    floor = min_partition_bytes(on_gpu)
    if len(sizes) < 2:
        return False
    rows = int(statistics.median(r for r, _ in sizes))
    nbytes = int(statistics.median(b for _, b in sizes))
    if nbytes >= floor:
        return False
    where = "gpu" if on_gpu else "cpu"
    work_ms = 1e3 * nbytes / WORK_BYTES_PER_SECOND[where]
    warnings.warn(
        f"partitions of about {nbytes:,} bytes ({rows:,} rows) carry about {work_ms:.2f} ms of work each on a "
        f"{where.upper()} (at {WORK_BYTES_PER_SECOND[where] / 1e9:g} GB/s), against Dask's fixed cost of about "
        f"{DASK_ROUND_TRIP_SECONDS * 1e3:g} ms a task: most of the time would go to Dask. Expected partitions of "
        f"at least {floor:,} bytes: leave partition_bytes and rows_per_partition out (arrowdev would take "
        f"{auto_bytes:,} bytes here) or choose larger ones", PartitionSizeWarning, stacklevel=stacklevel)
    return True
