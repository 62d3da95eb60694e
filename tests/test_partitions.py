"""read_parquet's partition sizes (arrowdev.integrations.dask.partitions): the rule's exact numbers, the plan of row groups
(merged, cut, every row once, in order), and the warning for partitions too small to outweigh Dask's cost."""

from __future__ import annotations

import random
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowdev.dask as add
from arrowdev.integrations.dask import parquet, partitions
from arrowdev.integrations.dask.partitions import Piece, RowGroup, plan, target_partition_bytes

GiB = 2**30


def test_the_floor_and_the_ceiling():
    assert partitions.min_partition_bytes(on_gpu=True) == 1_000_000_000  # 50 ms at 20 GB/s
    assert partitions.min_partition_bytes(on_gpu=False) == 50_000_000  # 50 ms at 1 GB/s
    assert partitions.max_partition_bytes(80 * GiB) == 5 * GiB  # 4 in flight x a working set of 4
    assert partitions.max_partition_bytes(80 * GiB, working_set=10) == 2 * GiB
    with pytest.raises(ValueError, match="working set > 0"):
        partitions.max_partition_bytes(GiB, working_set=0)


@pytest.mark.parametrize(("total", "memory", "workers", "gpu", "expected"), [
    (17_000_000_000, 80 * GiB, 4, True, 4_250_000_000),    # balance: one partition a GPU worker
    (17_000_000_000, 80 * GiB, 1, True, 5 * GiB),          # one GPU: the ceiling
    (10**6, 80 * GiB, 4, True, 1_000_000_000),             # little data: the floor, one partition
    (10**11, 8 * GiB, 4, True, GiB // 2),                  # a small GPU: the ceiling under the floor wins
    (10**9, 4 * GiB, 2, False, 250_000_000),               # CPU workers of 4 GiB: balance
    (10**11, 4 * GiB, 2, False, 4 * GiB // 16),            # CPU: the ceiling
    (10**7, 4 * GiB, 2, False, 50_000_000),                # CPU: the floor
])
def test_the_target(total, memory, workers, gpu, expected):
    assert target_partition_bytes(total, memory, workers, gpu) == expected


def _pieces(parts):
    return [[(p.path, p.index, p.start, p.stop) for p in part] for part in parts]


def test_small_row_groups_merge_and_large_ones_are_cut():
    groups = [RowGroup("f0", 0, 100, 1_000), RowGroup("f0", 1, 100, 1_000), RowGroup("f1", 0, 1000, 10_000),
              RowGroup("f1", 1, 100, 1_000), RowGroup("f2", 0, 100, 1_000)]
    assert _pieces(plan(groups, target_bytes=3_000)) == [
        [("f0", 0, 0, 100), ("f0", 1, 0, 100)],                     # merged, the next would pass the target
        [("f1", 0, 0, 250)], [("f1", 0, 250, 500)], [("f1", 0, 500, 750)], [("f1", 0, 750, 1000)],  # cut in 4
        [("f1", 1, 0, 100), ("f2", 0, 0, 100)],                     # merged across files
    ]
    assert _pieces(plan(groups, target_rows=1000)) == [
        [("f0", 0, 0, 100), ("f0", 1, 0, 100)], [("f1", 0, 0, 1000)], [("f1", 1, 0, 100), ("f2", 0, 0, 100)]]
    assert plan([], target_bytes=10) == []


def _random_groups(rng):
    return [RowGroup(f"f{i // 3}", i % 3, rows, rows * rng.randint(1, 40))
            for i, rows in enumerate(rng.randint(1, 5000) for _ in range(rng.randint(1, 12)))]


def _assert_every_row_once_in_order(parts, groups):
    covered = {}
    for p in (p for part in parts for p in part):
        covered.setdefault((p.path, p.index), []).append((p.start, p.stop))
    assert list(covered) == [(g.path, g.index) for g in groups]  # in order
    for g in groups:
        ranges = covered[g.path, g.index]
        assert ranges[0][0] == 0 and ranges[-1][1] == g.rows
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # back to back, no gap, no overlap


def test_every_row_once_and_in_order():
    rng = random.Random(7)
    for _ in range(200):
        groups = _random_groups(rng)
        target = rng.randint(1, 60_000)
        parts = plan(groups, target_bytes=target)
        _assert_every_row_once_in_order(parts, groups)
        for (rows, nbytes), part in zip(partitions.partition_sizes(parts, groups), parts):
            assert nbytes <= target or len(part) == 1  # only a cut piece of one row group may pass it (by rounding)


@pytest.mark.parametrize(("total", "target", "workers", "gpu", "expected"), [
    (13_700_000_000, 3_425_000_000, 4, True, 4),   # total / workers: already a multiple
    (30 * 10**9, 5 * GiB, 4, True, 8),             # 6 by the memory's ceiling: rounded up to 8 for 4 workers
    (5 * 10**9, 10**9, 4, True, 5),                # 8 would go under the floor of 1 GB: 5 stay
    (10**6, 10**9, 4, True, 1),                    # little data: one partition
    (10**9, 250_000_000, 3, False, 6),             # CPU: 4 by the target, 6 for 3 workers (167 MB > 50 MB)
])
def test_the_count_is_a_multiple_of_the_workers_above_the_floor(total, target, workers, gpu, expected):
    assert partitions.partition_count(total, target, workers, gpu) == expected


def test_balanced_plan_gives_every_worker_as_much():
    # 16 files a few bytes apart in size (as real files are): the target's greedy merge makes 9 or more
    # partitions of 8 workers' worth; the balanced plan 8 pairs
    groups = [RowGroup(f"f{i}", 0, 1000 + i, 34_000 + 17 * i) for i in range(16)]
    total = sum(g.nbytes for g in groups)
    assert len(plan(groups, target_bytes=-(-total // 8))) > 8
    parts = partitions.plan_balanced(groups, 8)
    assert [[p.path for p in part] for part in parts] == [[f"f{2 * k}", f"f{2 * k + 1}"] for k in range(8)]
    # a row group a bit past a slice stays whole; one of 1.5 slices or more is cut into equal row ranges
    uneven = [RowGroup("a", 0, 100, 1_100), RowGroup("b", 0, 100, 900), RowGroup("c", 0, 300, 3_000)]
    assert _pieces(partitions.plan_balanced(uneven, 5)) == [
        [("a", 0, 0, 100)], [("b", 0, 0, 100)], [("c", 0, 0, 100)], [("c", 0, 100, 200)], [("c", 0, 200, 300)]]
    # the memory's ceiling splits what the slices would merge, and cuts what it cannot hold
    assert _pieces(partitions.plan_balanced(groups[:4], 1, limit_bytes=70_000)) == [
        [("f0", 0, 0, 1000), ("f1", 0, 0, 1001)], [("f2", 0, 0, 1002), ("f3", 0, 0, 1003)]]
    assert _pieces(partitions.plan_balanced(groups[:1], 1, limit_bytes=20_000)) == [
        [("f0", 0, 0, 500)], [("f0", 0, 500, 1000)]]
    with pytest.raises(ValueError, match="partition count of at least 1"):
        partitions.plan_balanced(groups, 0)


def test_balanced_plan_reads_every_row_once_in_order_within_the_ceiling():
    rng = random.Random(11)
    for _ in range(200):
        groups = _random_groups(rng)
        limit = rng.randint(1_000, 200_000)
        parts = partitions.plan_balanced(groups, rng.randint(1, 10), limit_bytes=limit)
        _assert_every_row_once_in_order(parts, groups)
        row_bytes = {(g.path, g.index): -(-g.nbytes // g.rows) for g in groups}
        for (rows, nbytes), part in zip(partitions.partition_sizes(parts, groups), parts):
            # a cut piece may pass the ceiling by a row (rows are cut, not bytes)
            assert nbytes <= limit or len(part) == 1 and nbytes <= limit + row_bytes[part[0].path, part[0].index]


def test_read_parquet_gives_every_worker_as_many_partitions(tmp_path, monkeypatch):
    # 4 workers of ample memory, and a floor low enough for these small files (the rule's numbers otherwise)
    monkeypatch.setattr(parquet, "cluster_memory", lambda on_gpu, device=None: (64 * GiB, 4))
    monkeypatch.setattr(partitions, "MIN_TASK_SECONDS", 1e-9)
    paths = []
    for i in range(16):
        t = pa.table({"id": np.arange(i * 2000, i * 2000 + 1000 + i)})  # sizes a few rows apart
        pq.write_table(t, tmp_path / f"p{i:02d}.parquet")
        paths.append(str(tmp_path / f"p{i:02d}.parquet"))
    parts = add.read_parquet(paths)
    assert parts.npartitions == 8
    want = [v for p in paths for v in pq.read_table(p).column("id").to_pylist()]
    assert parts.compute(scheduler="sync").column("id").to_pylist() == want


@pytest.mark.parametrize("kwargs", [{}, {"target_bytes": 1, "target_rows": 1}, {"target_bytes": 0},
                                    {"target_rows": -5}, {"target_rows": 2.5}])
def test_plan_refuses_bad_targets(kwargs):
    with pytest.raises(ValueError, match="expected"):
        plan([RowGroup("f", 0, 10, 10)], **kwargs)


def _write(tmp_path, files=3, rows=4000, row_group=1000):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(files):
        t = pa.table({"id": np.arange(i * rows, (i + 1) * rows), "x": rng.random(rows),
                      "s": pa.array([f"v{j % 97}" for j in range(rows)])})
        pq.write_table(t, tmp_path / f"p{i}.parquet", row_group_size=row_group)
        paths.append(str(tmp_path / f"p{i}.parquet"))
    return paths


def test_read_parquet_merges_small_row_groups_by_itself_without_a_warning(tmp_path):
    paths = _write(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parts = add.read_parquet(paths, columns=["id", "s"])
    assert parts.npartitions == 1  # 12 row groups of a few KB: under the floor, one partition
    got = parts.compute(scheduler="sync")
    assert got.column_names == ["id", "s"] and got.column("id").to_pylist() == list(range(12_000))
    assert got.column("s").num_chunks == 1  # merged row groups become one chunk a column


def test_a_choice_of_small_partitions_warns_and_still_reads_every_row_in_order(tmp_path):
    paths = _write(tmp_path)
    with pytest.warns(add.PartitionSizeWarning, match=r"about \d[\d,]* bytes \(1,000 rows\).*Dask's fixed cost of "
                      r"about 6 ms a task.*at least 50,000,000 bytes"):
        parts = add.read_parquet(paths, rows_per_partition=1500)
    assert parts.npartitions == 12  # each row group alone (two would pass 1500 rows)
    with pytest.warns(add.PartitionSizeWarning):
        cut = add.read_parquet(paths, partition_bytes=10_000)  # row groups of ~30 KB cut into row ranges
    assert cut.npartitions > 12
    for collection in (parts, cut):
        assert collection.compute(scheduler="sync").column("id").to_pylist() == list(range(12_000))


def test_one_partition_or_large_enough_ones_do_not_warn(tmp_path):
    paths = _write(tmp_path, files=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert add.read_parquet(paths, rows_per_partition=10**6).npartitions == 1
        assert add.read_parquet(paths, partition_bytes=10**9).npartitions == 1


def test_read_parquet_refuses_two_targets(tmp_path):
    paths = _write(tmp_path, files=1)
    with pytest.raises(ValueError, match="at most one of partition_bytes and rows_per_partition"):
        add.read_parquet(paths, rows_per_partition=10, partition_bytes=10)
    with pytest.raises(ValueError, match="target size of at least 1"):
        add.read_parquet(paths, rows_per_partition=0)


def test_row_groups_count_only_the_columns_read(tmp_path):
    [path] = _write(tmp_path, files=1, rows=1000, row_group=500)
    every = parquet.row_groups([path], None)
    some = parquet.row_groups([path], ["id"])
    assert [(g.index, g.rows) for g in every] == [(0, 500), (1, 500)]
    meta = pq.read_metadata(path).row_group(0)
    assert some[0].nbytes == meta.column(0).total_uncompressed_size < every[0].nbytes == meta.total_byte_size


def test_without_a_client_a_cpu_worker_is_a_core():
    memory, workers = parquet.cluster_memory(on_gpu=False)
    assert workers >= 1 and memory > 0
    gpu_memory, gpu_workers = parquet.cluster_memory(on_gpu=True)
    assert gpu_workers == 1 and gpu_memory > 0  # this process's GPU, or 16 GiB where there is none


def test_piece_is_a_plain_tuple():
    assert Piece("f", 1, 2, 3) == ("f", 1, 2, 3)


def test_a_partition_is_one_libcudf_read():
    """Each partition plan makes becomes one libcudf read: consecutive row groups of a file one source, the
    files in order, a whole group by its index, a row range as rows of its file to skip and read (libcudf takes
    no row groups beside rows to skip)."""
    groups = [RowGroup("a", 0, 100, 10), RowGroup("a", 1, 100, 10), RowGroup("b", 0, 100, 10),
              RowGroup("c", 0, 1000, 100), RowGroup("c", 1, 300, 30)]
    merged, *cut, whole = plan(groups, target_rows=300)
    c_rows = [1000, 300]
    assert parquet.libcudf_selection(merged, [100, 100]) == (["a", "b"], [[0, 1], [0]], 0, None)
    assert [parquet.libcudf_selection(p, c_rows) for p in cut] == [(["c"], None, 0, 250), (["c"], None, 250, 250),
                                                                   (["c"], None, 500, 250), (["c"], None, 750, 250)]
    assert parquet.libcudf_selection(whole, c_rows) == (["c"], [[1]], 0, None)
    assert parquet.libcudf_selection((Piece("c", 1, 100, 200),), c_rows) == (["c"], None, 1100, 100)
    again = plan([RowGroup("a", 0, 100, 10), RowGroup("b", 0, 100, 10), RowGroup("a", 1, 100, 10)], target_rows=300)
    assert parquet.libcudf_selection(again[0], [100, 100]) == (["a", "b", "a"], [[0], [0], [1]], 0, None)
    with pytest.raises(ValueError, match="expected whole row groups"):
        parquet.libcudf_selection((Piece("a", 0, 0, 10), Piece("a", 1, 5, 10)), [10, 10])
    with pytest.raises(ValueError, match="expected c to have row group 2 of at least 300 rows.*2 row groups now"):
        parquet.libcudf_selection((Piece("c", 2, 0, 300),), c_rows)  # the file rewritten since planned


def test_the_engine_is_checked_and_cpu_partitions_are_read_by_pyarrow(tmp_path):
    paths = _write(tmp_path, files=1, rows=100, row_group=50)
    with pytest.raises(ValueError, match="expected engine 'auto', 'cudf' or 'pyarrow', got 'gpu'"):
        add.read_parquet(paths, engine="gpu")
    # CPU partitions never go to libcudf, whatever the engine asked for
    assert add.read_parquet(paths, engine="cudf").compute(scheduler="sync").equals(
        add.read_parquet(paths, engine="pyarrow").compute(scheduler="sync"))


def test_libcudf_decoding_without_pylibcudf_names_the_extra(tmp_path, monkeypatch):
    paths = _write(tmp_path, files=1, rows=100, row_group=50)
    monkeypatch.setitem(sys.modules, "pylibcudf", None)  # import pylibcudf raises ImportError
    with pytest.raises(ImportError, match=r"engine='cudf' needs pylibcudf: pip install 'arrowdev\[cudf13\]'"):
        add.read_parquet(paths, device="cuda", engine="cudf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto falls back to PyArrow without a word: no pylibcudf is no mistake
        assert add.read_parquet(paths, device="cuda").npartitions == 1
