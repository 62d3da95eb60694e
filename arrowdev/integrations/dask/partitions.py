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
- **balance**: as many partitions on every worker: a count that is a multiple of the workers, the partitions as
  equal as the row groups allow (a worker left with one partition fewer idles for a partition's time: measured,
  11 partitions on 4 GPUs ran 0.67x of a peer that had 16, docs/distributed.md); where the data allows it,
  :data:`PARTITIONS_PER_WORKER` a worker: one on a GPU (libcudf reads several files in one read faster per
  row than in two: a GPU worker runs one task at a time, so a second partition adds a read, not overlap), two
  on a CPU;

:func:`target_partition_bytes` = ``min(ceiling, max(floor, total / (per worker * workers)))``; the ceiling wins where a
small GPU puts it under the floor. :func:`partition_count` turns it into a count, rounded up to a multiple of
the workers where the partitions stay above the floor, and :func:`plan_balanced` cuts the row groups, in order,
into that many slices of equal bytes: a row group goes to the slice its middle falls in, and one larger than a
slice is cut into equal row ranges. A user's target goes to :func:`plan`, which merges row groups into a
partition while they fit the target.

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

__all__ = ["DASK_ROUND_TRIP_SECONDS", "MIN_TASK_SECONDS", "PARTITIONS_IN_FLIGHT", "PARTITIONS_PER_WORKER",
           "PartitionSizeWarning", "Piece", "RowGroup", "WORK_BYTES_PER_SECOND", "max_partition_bytes",
           "min_partition_bytes", "partition_count",
           "plan", "plan_balanced", "target_partition_bytes", "warn_if_overhead_bound"]

DASK_ROUND_TRIP_SECONDS = 0.006
"""distributed's own cost of a task, submitted to done (docs/distributed.md, "Whose the round trip is")."""
MIN_TASK_SECONDS = 0.05
"""The least work a task should carry: Dask's round trip then costs about a tenth of it."""
WORK_BYTES_PER_SECOND = {"gpu": 20e9, "cpu": 1e9}
"""Bytes of input a job of a few UDFs goes through per second: on a GPU several passes at a fraction of the
memory bandwidth (numeric UDFs run at hundreds of GB/s, new strings at tens: docs/udf.md, docs/strings.md); on a
CPU core, numba's compiled loops."""
PARTITIONS_IN_FLIGHT = 4
PARTITIONS_PER_WORKER = {"gpu": 1, "cpu": 2}
"""The balance term's partitions a worker, where the data is large enough (module docstring)."""
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
    """Bytes a partition should hold: ``min(ceiling, max(floor, total / (per worker * workers)))`` (module
    docstring; :data:`PARTITIONS_PER_WORKER`).

    >>> target_partition_bytes(17 * 10**9, 80 * 2**30, workers=4, on_gpu=True)  # 17 GB on 4 x 80 GiB: balance
    4250000000
    >>> target_partition_bytes(17 * 10**9, 80 * 2**30, workers=1, on_gpu=True)  # one GPU: its memory / 16
    5368709120
    >>> target_partition_bytes(10**6, 80 * 2**30, workers=4, on_gpu=True)       # little data: the floor
    1000000000
    """
    balance = math.ceil(total_bytes / (PARTITIONS_PER_WORKER["gpu" if on_gpu else "cpu"] * max(1, workers)))
    return max(1, min(max_partition_bytes(memory_bytes, working_set), max(min_partition_bytes(on_gpu), balance)))


def partition_count(total_bytes: int, target_bytes: int, workers: int, on_gpu: bool) -> int:
    """How many partitions of about ``target_bytes`` the data makes, rounded up to a multiple of ``workers``
    where the partitions stay at or above :func:`min_partition_bytes` (every worker then gets as many).

    >>> partition_count(13_700_000_000, 3_425_000_000, workers=4, on_gpu=True)  # total / workers: 4
    4
    >>> partition_count(30 * 10**9, 5 * 2**30, workers=4, on_gpu=True)         # 6 by the target: 8 for 4 workers
    8
    >>> partition_count(5 * 10**9, 1_000_000_000, workers=4, on_gpu=True)      # 8 would go under the floor
    5
    """
    count = max(1, math.ceil(total_bytes / max(1, target_bytes)))
    workers = max(1, workers)
    even = math.ceil(count / workers) * workers
    if count > 1 and even != count and total_bytes / even >= min_partition_bytes(on_gpu):
        return even
    return count


def plan_balanced(row_groups: Sequence[RowGroup], count: int,
                  limit_bytes: int | None = None) -> list[tuple[Piece, ...]]:
    """About ``count`` partitions of equal bytes: the row groups in order, each in the slice (of ``total /
    count`` bytes) its middle falls in, and none past ``limit_bytes`` (the memory's ceiling); a row group of
    1.5 slices or more (or past the limit) cut into about ``size / slice`` equal row ranges, each a partition
    of its own.

    >>> groups = [RowGroup("f", i, rows=10, nbytes=100 + i) for i in range(16)]
    >>> [len(part) for part in plan_balanced(groups, 8)]
    [2, 2, 2, 2, 2, 2, 2, 2]
    >>> [[(p.start, p.stop) for p in part] for part in plan_balanced([RowGroup("f", 0, 90, 900)], 3)]
    [[(0, 30)], [(30, 60)], [(60, 90)]]
    """
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise ValueError(f"expected a partition count of at least 1, got {count!r}")
    total = sum(g.nbytes for g in row_groups)
    width = total / count if total else 1.0
    limit = limit_bytes if limit_bytes is not None else math.inf
    partitions: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    current_slice, before, held = -1, 0, 0
    for group in row_groups:
        middle = before + group.nbytes / 2
        before += group.nbytes
        pieces = max(round(group.nbytes / width), math.ceil(group.nbytes / limit), 1)
        if pieces > 1:
            if current:
                partitions.append(tuple(current))
                current, held = [], 0
            partitions.extend((Piece(group.path, group.index, a, b),) for a, b in _cut(group.rows, pieces))
            current_slice = -1
            continue
        index = min(count - 1, int(middle // width))
        if current and (index != current_slice or held + group.nbytes > limit):
            partitions.append(tuple(current))
            current, held = [], 0
        current_slice = index
        current.append(Piece(group.path, group.index, 0, group.rows))
        held += group.nbytes
    if current:
        partitions.append(tuple(current))
    return partitions


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
