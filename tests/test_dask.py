"""arrowdev.dask on a real distributed cluster (two worker processes, one thread each, one cluster for
the module) and in process: gather, persist, compute, Parquet, dask.dataframe, UDF pipelines equal to
the in-process result; GPU tests for dask-cuda's LocalCUDACluster."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster, futures_of, wait
from distributed.protocol import serialize

import arrowdev as ad
import arrowdev.dask as add
from support.clusters import close_workers
from support.dask_merges import count_merge_copies, merge_copied
from support.samples import CASES


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                      worker_dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


def _table(n: int = 1000, seed: int = 0) -> ad.ArrowTable:
    rng = np.random.default_rng(seed)
    a = pa.array(rng.integers(-100, 100, n), mask=rng.random(n) < 0.1)
    return ad.table({"a": a, "b": pa.array(rng.random(n)), "s": pa.array([f"s{i % 37}" for i in range(n)])})


def _udf(a, b):
    return a * 2 + b if a > 0 else b - a


def _pipeline(t: ad.ArrowTable) -> ad.ArrowTable:
    return t.append_column("y", t.apply(_udf, columns=["a", "b"]))


def test_the_dask_family_is_registered():
    header, _ = serialize(_table(10))
    assert header["serializer"] == "dask"


def test_registration_when_distributed_is_imported_after_arrowdev(tmp_path):
    code = ("import pickle, pyarrow as pa, arrowdev as ad, distributed.protocol as p\n"
            "t = ad.table({'x': pa.array([1, 2])})\n"
            "first = p.serialize(t)[0]['serializer']\n"
            "second = p.serialize(t)[0]['serializer']\n"
            "print(first, second)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["pickle", "dask"]  # the first send pickles (zero-copy too), then registers


def test_scatter_gather_and_worker_to_worker(client):
    tbl = _table(5000).slice(123, 3001)
    workers = sorted(client.scheduler_info()["workers"])
    [future] = client.scatter([tbl], workers=workers[:1])
    assert client.gather(future).equals(tbl)
    moved = client.submit(lambda t: t.slice(1), future, workers=workers[1:], pure=False)
    assert client.gather(moved).equals(tbl.slice(1))
    column = client.submit(lambda t: t.column("s"), future, workers=workers[1:], pure=False)
    assert client.gather(column).to_pylist() == tbl.column("s").to_pylist()


def test_every_sample_type_travels_between_workers(client):
    tbl = ad.table({name.replace("[", "_").replace("]", "_"): arr.slice(3, 11) for name, arr in CASES.items()})
    workers = sorted(client.scheduler_info()["workers"])
    [future] = client.scatter([tbl], workers=workers[:1])
    back = client.gather(client.submit(lambda t: t, future, workers=workers[1:], pure=False))
    assert back.equals(tbl)


def _register_whole_buffers() -> None:
    """The ``dask`` family as it was before buffers went in row pieces: every buffer one frame."""
    from distributed.protocol.serialize import dask_serialize

    from arrowdev.serialize import frames as _serialize

    for cls in (ad.ArrowColumn, ad.ArrowTable):
        dask_serialize.register(cls)(_serialize.host_frames)


def test_buffers_larger_than_the_shard_size_travel_between_workers_without_merge_copies(monkeypatch):
    """distributed's TCP comm cuts a frame above ``distributed.comm.shard`` into shards, and the receiver
    copies every frame's shards back together but the first's; CPU buffers above it travel in row ranges
    under it instead (a chunk each on the receiver): nothing is copied, the values are the same. The same
    table sent with each buffer one frame (the registration before) is the reference: copies happen."""
    from arrowdev.integrations.dask import _distributed

    rng = np.random.default_rng(3)
    n = 20_000
    tbl = ad.table({"a": pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.1), "b": pa.array(rng.random(n)),
                    "s": pa.array([f"value {i}" * (i % 4) for i in range(n)])})
    copied = {}
    # TCP reads its shard size when it is imported: the workers' from the environment, before their start
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__SHARD", "16KiB")
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                         worker_dashboard_address=":0") as cluster, Client(cluster) as client:
        client.run(count_merge_copies)
        a, b = sorted(client.scheduler_info()["workers"])
        try:
            for registration in ("row pieces", "whole buffers"):
                if registration == "whole buffers":
                    client.run(_register_whole_buffers)
                    _register_whole_buffers()
                [future] = client.scatter([tbl], workers=[a], hash=False)
                before = client.run(merge_copied)[b]
                moved = client.submit(lambda x: x, future, workers=[b], pure=False)
                got = moved.result()
                copied[registration] = client.run(merge_copied)[b] - before
                assert got.equals(tbl)
                assert got.column("a").null_count == tbl.column("a").null_count
                if registration == "row pieces":
                    assert min(c.num_chunks for c in got.columns) > 1  # each column in pieces under 16 KiB
        finally:
            _distributed.register()
    assert copied["row pieces"] == 0
    assert copied["whole buffers"] > 100_000  # the shards of b and s's buffers (a's go with the header)


def test_persist_compute_and_the_udf_pipeline_equal_in_process(client, tmp_path):
    parts = [_table(700, seed) for seed in range(4)]
    for i, p in enumerate(parts):
        pq.write_table(p.to_pyarrow(), tmp_path / f"p{i}.parquet", row_group_size=350)
    with pytest.warns(add.PartitionSizeWarning):  # a partition a row group: far too small, says read_parquet
        collection = add.read_parquet(str(tmp_path / "*.parquet"), columns=["a", "b", "s"], rows_per_partition=350)
    assert collection.npartitions == 8
    out = collection.map_partitions(_pipeline).persist()
    futures = futures_of(out)
    wait(futures)
    assert len(futures) == 8 and all(client.who_has(futures).values())  # the partitions stay on the workers
    got = out.compute()
    want = collection.map_partitions(_pipeline).compute(scheduler="sync")
    assert got.num_rows == 2800 and got.column("y").num_chunks == 8
    assert got.equals(want)
    expected_y = [None if a is None else _udf(a, b) for p in parts for a, b in
                  zip(p.column("a").to_pylist(), p.column("b").to_pylist())]
    assert got.column("y").to_pylist() == expected_y


def test_apply_and_to_parquet_on_the_cluster(client, tmp_path):
    collection = add.from_map(lambda seed: _table(300, seed), range(3))
    y = collection.apply(_udf, columns=["a", "b"])
    assert isinstance(y, add.PartitionedColumn)
    got = collection.append_column("y", y).compute()
    assert got.equals(_pipeline(ad.table(pa.concat_tables([_table(300, s).to_pyarrow() for s in range(3)]))))
    written = collection.to_parquet(str(tmp_path / "out"))
    assert len(written) == 3
    again = add.read_parquet(str(tmp_path / "out")).compute()
    assert again.equals(collection.compute(scheduler="sync"))


def test_dask_dataframe_both_ways_and_udf(client):
    import dask.dataframe as dd

    frame = pd.DataFrame({"a": np.arange(100, dtype=np.int64) - 50, "b": np.linspace(0, 1, 100)})
    ddf = dd.from_pandas(frame, npartitions=4)
    collection = add.from_dask_dataframe(ddf)
    assert collection.npartitions == 4
    assert collection.compute().to_pyarrow().to_pandas().equals(frame)
    back = collection.map_partitions(_pipeline).to_dask_dataframe().compute()
    assert back["y"].tolist() == [_udf(a, b) for a, b in zip(frame.a, frame.b)]
    assert isinstance(back["y"].dtype, pd.ArrowDtype)
    with_udf = ddf.map_partitions(add.udf(_udf, columns=["a", "b"], out="y")).compute()
    assert with_udf["y"].tolist() == back["y"].tolist()
    assert with_udf.index.tolist() == frame.index.tolist()


def test_from_frame_of_arrow_dtypes_is_zero_copy():
    arr = pa.array(np.arange(1000, dtype=np.float64))
    frame = pd.DataFrame({"x": pd.arrays.ArrowExtensionArray(arr)})
    tbl = add.from_frame(frame)
    assert tbl.column("x").buffers[-1].address == arr.buffers()[1].address
    back = add.to_frame(tbl)
    assert pa.array(back["x"].array).buffers()[1].address == arr.buffers()[1].address


def test_collection_errors():
    with pytest.raises(TypeError, match="expected at least one PartitionedTable"):
        add.map_partitions(lambda x: x, 1)
    a = add.from_map(lambda i: pa.table({"x": [i]}), range(2))
    b = add.from_map(lambda i: pa.table({"x": [i]}), range(3))
    with pytest.raises(ValueError, match="one number of partitions"):
        add.map_partitions(lambda x, y: x, a, b)
    mixed = add.from_map(lambda i: pa.table({"x": [i]}) if i else pa.table({"x": ["s"]}), range(2))
    with pytest.raises(ValueError, match="expected partitions of one schema"):
        mixed.compute(scheduler="sync")
    with pytest.raises(ValueError, match="expected device"):
        add.read_parquet("nowhere/*.parquet", device="tpu")


# ---- GPU (dask-cuda): the lead runs these ----------------------------------------------------------


@pytest.fixture(scope="module")
def cuda_client():
    dask_cuda = pytest.importorskip("dask_cuda")
    with dask_cuda.LocalCUDACluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                                    device_memory_limit="64MiB") as cluster, Client(cluster) as c:
        yield c
        close_workers(cluster)


def _device_of(t):
    return t.device.type


def _sum_of_y(t):
    return float(pa.compute.sum(t.column("y").to_pyarrow()).as_py())


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ["pyarrow", "cudf"])
def test_gpu_partitions_stay_on_the_gpu_across_tasks(cuda_client, tmp_path, engine):
    if engine == "cudf":
        pytest.importorskip("pylibcudf")
    pq.write_table(_table(4000).to_pyarrow(), tmp_path / "d.parquet", row_group_size=1000)
    parts = add.read_parquet(str(tmp_path / "d.parquet"), device="cuda", engine=engine)  # 4 row groups in one
    out = parts.map_partitions(_pipeline).persist()
    devices = dask.compute(*[dask.delayed(_device_of)(p) for p in out.to_delayed()])
    assert set(devices) == {"cuda"}
    got = out.compute()
    assert got.equals(add.read_parquet(str(tmp_path / "d.parquet")).map_partitions(_pipeline)
                      .compute(scheduler="sync"))


@pytest.mark.gpu
def test_gpu_spilling_below_the_data_size_gives_right_results(cuda_client):
    from dask_cuda.is_device_object import is_device_object

    n = 4_000_000  # 8 partitions of 32 MB of float64 each: 256 MB against a 64 MiB device limit
    parts = add.from_map(lambda i: ad.table({"x": pa.array(np.full(n, float(i)))}).to_device(), range(8))
    assert is_device_object(ad.table({"x": pa.array([1.0])}).to_device())
    out = parts.map_partitions(lambda t: t.append_column("y", t.apply(lambda x: x + 1, columns=["x"]))).persist()
    sums = dask.compute(*[dask.delayed(_sum_of_y)(p) for p in out.to_delayed()])
    assert list(sums) == [n * (i + 1.0) for i in range(8)]


@pytest.mark.gpu
def test_gpu_a_table_still_being_produced_is_never_sent_early():
    """The producer (a copy queued behind long work on its own stream) is still running when the table
    is serialized: the cuda family hands frames over only after the table's sync event, and the
    pickle / dask families' host copy waits for it too."""
    import pickle

    import cupy as cp

    from arrowdev.serialize import frames as _serialize

    host = ad.column(pa.array(np.arange(20_000_000, dtype=np.float64)))
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        busy = cp.zeros(100_000_000, dtype=cp.float64)
        for _ in range(30):  # about 10 ms of work ahead of the copy
            busy += 1
    col = host.to_device(stream=stream)
    header, frames = _serialize.device_frames(col)
    assert stream.done  # the busy work and the copy had finished before the frames were handed over
    got = _serialize.from_frames(header, frames)
    assert got.device.type == "cuda" and got.to_pyarrow().equals(host.to_pyarrow())
    with stream:
        for _ in range(30):
            busy += 1
    col = host.to_device(stream=stream)
    assert pickle.loads(pickle.dumps(col, protocol=5)).to_pyarrow().equals(host.to_pyarrow())
    with stream:  # a table: its columns' events, not its record batches', say when the data is ready
        for _ in range(30):
            busy += 1
    tbl = ad.table({"x": host, "s": pa.array(["a", None, "ccc", "dd"] * 5_000_000)}).to_device(stream=stream)
    header, frames = _serialize.device_frames(tbl)
    assert stream.done
    assert _serialize.from_frames(header, frames).equals(tbl)
    del busy


@pytest.mark.gpu
def test_gpu_tcp_ping_pong_of_every_type(cuda_client):
    """Client -> dask-cuda worker -> client (tests/test_dask_ucx.py moves every type between two of
    distributed's own workers; this is the dask-cuda worker, with its own CUDA_VISIBLE_DEVICES)."""
    tbl = ad.table({name.replace("[", "_").replace("]", "_"): arr.slice(3, 11) for name, arr in CASES.items()})
    on_gpu = tbl.to_device()
    [future] = cuda_client.scatter([on_gpu])
    back = cuda_client.gather(cuda_client.submit(lambda t: (t.device.type, t), future, pure=False))
    assert back[0] == "cuda"
    assert back[1].equals(tbl)


# ---- GPU memory in a cluster -------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_rmm_pool_with_a_limit():
    pytest.importorskip("rmm")
    from arrowdev.gpu import memory

    saved = memory._pool
    try:
        ad.cuda.use_rmm(limit_bytes=20_000_000)
        col = ad.column(pa.array(np.arange(1_000_000, dtype=np.float64))).to_device()  # 8 MB from RMM
        assert isinstance(memory.pool(), memory.RmmPool)
        out = col.apply(lambda x: x + 1)  # 8 MB more
        assert out.to_pyarrow().to_pylist()[:3] == [1.0, 2.0, 3.0]
        with pytest.raises(MemoryError, match="limit of 20000000 bytes"):
            ad.column(pa.array(np.arange(1_000_000, dtype=np.float64))).to_device()
        del col, out
    finally:
        memory._pool = saved
        ad.cuda.set_limit(None)


def test_per_partition_results_through_delayed(client):
    """The mechanics the GPU tests use, on the CPU cluster: per-partition values of a persisted collection."""
    parts = add.from_map(lambda i: ad.table({"x": pa.array(np.full(1000, float(i)))}), range(4))
    out = parts.map_partitions(lambda t: t.append_column("y", t.apply(lambda x: x + 1, columns=["x"]))).persist()
    assert dask.compute(*[dask.delayed(_device_of)(p) for p in out.to_delayed()]) == ("cpu",) * 4
    assert list(dask.compute(*[dask.delayed(_sum_of_y)(p) for p in out.to_delayed()])) == [1000.0 * (i + 1)
                                                                                            for i in range(4)]


@pytest.mark.gpu
def test_gpu_cudf_partitions_both_ways_and_udf():
    """cuDF partitions (where cuDF is installed, ../shared/gpu/fetch-cudf): through pylibcudf's device
    interface into arrowdev and back, and add.udf inside dask_cudf's map_partitions."""
    cudf = pytest.importorskip("cudf")
    frame = cudf.DataFrame({"a": np.arange(100, dtype=np.int64) - 50, "b": np.linspace(0, 1, 100)})
    tbl = add.from_frame(frame)
    # pylibcudf's export marks columns without nulls non-nullable; cuDF's to_arrow does not: compare values
    assert tbl.device.type == "cuda" and tbl.to_pyarrow().columns == frame.to_arrow().columns
    back = add.to_frame(tbl)
    assert isinstance(back, cudf.DataFrame) and back.to_arrow().equals(frame.to_arrow())
    out = add.udf(_udf, columns=["a", "b"], out="y")(frame)
    assert out["y"].to_arrow().to_pylist() == [_udf(a, b) for a, b in zip(frame.a.to_arrow().to_pylist(),
                                                                           frame.b.to_arrow().to_pylist())]


# ---- the end-to-end job of examples/scale_job.py (docs/distributed.md, "The way to use arrowdev at scale") ----


def test_the_scale_job_on_two_workers_equals_in_process(client, tmp_path):
    from support.scale import close, pyarrow_stats, scale_job

    job = scale_job(client)
    files = job.write_dataset(str(tmp_path / "data"), files=4, rows_per_file=3000, row_group_rows=1500)
    with pytest.warns(add.PartitionSizeWarning):  # 8 tiny partitions, so that both workers take some
        got = job.run_job(files, device=None, output=str(tmp_path / "out"), rows_per_partition=1500)
    assert got.pop("files") == 8
    want = job.run_in_process(files)
    assert got == want  # the same partitions, each computed the same way, sums added with fsum
    assert close(want, pyarrow_stats(files)) and want["rows"] == 12_000 and want["hits"] > 0
    written = pq.read_table(str(tmp_path / "out"))
    assert written.column_names == job.COLUMNS + ["y", "shout", "hit"] and written.num_rows == 12_000
    assert written["shout"].to_pylist() == [s.upper() + "!" for s in written["s"].to_pylist()]


def _slow(t, seconds):
    import time

    time.sleep(seconds)
    return t


def test_a_worker_killed_mid_job_ends_in_the_right_result_or_a_clear_error(tmp_path):
    """A worker process killed while it runs a task of the job: distributed reschedules its tasks (the nanny
    starts a new worker), or, past ``allowed-failures``, raises KilledWorker; never a hang or a wrong result."""
    import os
    import signal
    import time

    from distributed.scheduler import KilledWorker

    from support.scale import scale_job

    job = scale_job()
    files = job.write_dataset(str(tmp_path / "data"), files=4, rows_per_file=1000, row_group_rows=500)
    want = job.run_in_process(files)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                      worker_dashboard_address=":0") as cluster, Client(cluster) as c:
        scale_job(c)
        with pytest.warns(add.PartitionSizeWarning):
            parts = add.read_parquet(files, rows_per_partition=500)
        futures = c.compute(job.job_graph(parts.map_partitions(_slow, 0.3)))
        deadline = time.monotonic() + 60
        while not any(c.processing().values()):
            assert time.monotonic() < deadline, "no task started within 60 s"
            time.sleep(0.02)
        victim = next(w for w, keys in c.processing().items() if keys)
        os.kill(c.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
        wait(futures, timeout=120)  # raises TimeoutError on a hang
        try:
            got = job.combine(c.gather(futures))
        except KilledWorker as e:
            assert "worker" in str(e).lower()
        else:
            assert got == want


@pytest.mark.gpu
def test_gpu_the_scale_job_with_spilling_equals_in_process(cuda_client, tmp_path):
    """cuda_client's worker spills past 64 MiB: the dataset (about 160 MB on the GPU) is persisted, so most
    partitions go to host memory and come back for the job."""
    from support.scale import close, pyarrow_stats, scale_job

    job = scale_job(cuda_client)
    files = job.write_dataset(str(tmp_path / "data"), files=4, rows_per_file=1_000_000, row_group_rows=500_000)
    with pytest.warns(add.PartitionSizeWarning):
        parts = add.read_parquet(files, columns=job.COLUMNS, device="cuda", rows_per_partition=500_000).persist()
    wait(parts)
    assert dask.compute(*[dask.delayed(_device_of)(p) for p in parts.to_delayed()]) == ("cuda",) * 8
    got = job.finish(dask.compute(*job.job_graph(parts)), None)
    assert close(got, job.run_in_process(files, device="cuda"))  # sums may differ in the last place (chunking)
    assert close(got, pyarrow_stats(files))


@pytest.mark.gpu
def test_gpu_a_partition_that_does_not_fit_is_a_memory_error_naming_its_size(tmp_path):
    pq.write_table(_table(10_000).to_pyarrow(), tmp_path / "d.parquet")
    # set_limit bounds arrowdev's own allocations (the copy PyArrow's table takes to the GPU), not libcudf's
    parts = add.read_parquet(str(tmp_path / "d.parquet"), device="cuda", engine="pyarrow")
    ad.cuda.set_limit(1000)
    try:
        with pytest.raises(MemoryError, match=r"a partition of [\d,]+ bytes \(10,000 rows from .*d.parquet row group "
                           r"0\) does not fit on GPU \d+: [\d,-]+ of its [\d,-]+ bytes free.*partition_bytes"):
            parts.compute(scheduler="sync")
    finally:
        ad.cuda.set_limit(None)


def _write_with_nulls(tmp_path, files=2, rows=3000, row_group=1000):
    rng = np.random.default_rng(7)
    paths = []
    for i in range(files):
        x = pa.array(rng.random(rows), mask=rng.random(rows) < 0.1)
        s = pa.array([None if j % 11 == 0 else f"s{i}-{j % 37}" * (j % 4) for j in range(rows)])
        full = pa.array(np.arange(i * rows, (i + 1) * rows))  # no nulls: libcudf marks it non-nullable
        pq.write_table(pa.table({"id": full, "x": x, "s": s}), tmp_path / f"n{i}.parquet", row_group_size=row_group)
        paths.append(str(tmp_path / f"n{i}.parquet"))
    return paths


@pytest.mark.gpu
@pytest.mark.parametrize("rows_per_partition", [None, 2500, 700])
def test_gpu_libcudf_reads_each_partition_as_pyarrow_does(tmp_path, rows_per_partition):
    """engine="cudf": a partition of all six row groups of two files, of two groups spanning the files, and
    row ranges of one group; each one libcudf read (a chunk a column), equal to PyArrow's, schema included."""
    pytest.importorskip("pylibcudf")
    files = _write_with_nulls(tmp_path)
    options = {} if rows_per_partition is None else {"rows_per_partition": rows_per_partition}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", add.PartitionSizeWarning)
        on_gpu = add.read_parquet(files, device="cuda", engine="cudf", **options)
        on_cpu = add.read_parquet(files, engine="pyarrow", **options)
    assert on_gpu.npartitions == on_cpu.npartitions == {None: 1, 2500: 3, 700: 12}[rows_per_partition]
    got = dask.compute(*on_gpu.to_delayed(), scheduler="sync")
    want = dask.compute(*on_cpu.to_delayed(), scheduler="sync")
    for g, w in zip(got, want):
        assert g.device.type == "cuda"
        assert [g.column(n).num_chunks for n in g.column_names] == [1, 1, 1]
        assert g.to_pyarrow().equals(w.to_pyarrow()), (g.to_pyarrow().schema, w.to_pyarrow().schema)


@pytest.mark.gpu
@pytest.mark.multi_gpu
def test_gpu_the_scale_job_on_several_gpus_equals_in_process(tmp_path):
    dask_cuda = pytest.importorskip("dask_cuda")
    gpus = min(ad.cuda.device_count(), 4)
    if gpus < 2:
        pytest.skip("needs two GPUs")
    from support.scale import close, pyarrow_stats, scale_job

    job = scale_job()
    files = job.write_dataset(str(tmp_path / "data"), files=2 * gpus, rows_per_file=500_000, row_group_rows=500_000)
    with dask_cuda.LocalCUDACluster(n_workers=gpus, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        scale_job(c)
        with pytest.warns(add.PartitionSizeWarning):
            parts = add.read_parquet(files, columns=job.COLUMNS, device="cuda", rows_per_partition=500_000).persist()
        wait(parts)
        assert len({w for ws in c.who_has(futures_of(parts)).values() for w in ws}) >= 2  # spread over the GPUs
        got = job.finish(dask.compute(*job.job_graph(parts)), None)
        close_workers(cluster)
    assert close(got, job.run_in_process(files, device="cuda"))  # sums may differ in the last place (chunking)
    assert close(got, pyarrow_stats(files))


def test_a_partitions_chain_of_steps_is_one_task(tmp_path):
    """read_parquet then two map_partitions: the optimized graph runs each partition's chain as one task (the
    other keys only name its result), and Dask's optimization.fuse.active = False keeps the steps apart."""
    pq.write_table(_table(2000).to_pyarrow(), tmp_path / "d.parquet", row_group_size=500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", add.PartitionSizeWarning)
        parts = add.read_parquet(str(tmp_path / "d.parquet"), rows_per_partition=500)
    out = parts.map_partitions(_pipeline).map_partitions(lambda t: t.append_column("z", t.column("a")))

    def work(graph):  # the tasks that call something, not the names of other tasks' results
        return [k for k, v in dict(graph).items() if type(v).__name__ != "Alias"]

    keys = out.__dask_keys__()
    assert len(work(out.__dask_graph__())) == 12
    assert len(work(out.__dask_optimize__(out.__dask_graph__(), keys))) == 4
    with dask.config.set({"optimization.fuse.active": False}):
        assert len(work(out.__dask_optimize__(out.__dask_graph__(), keys))) == 12
    fused = dask.compute(*out.to_delayed(), scheduler="sync")
    apart = dask.compute(*out.to_delayed(optimize_graph=False), scheduler="sync")
    assert [t.to_pyarrow() for t in fused] == [t.to_pyarrow() for t in apart]
    assert out.compute(scheduler="sync").equals(_pipeline(ad.table(pq.read_table(tmp_path / "d.parquet")))
                                               .append_column("z", _pipeline(ad.table(pq.read_table(
                                                   tmp_path / "d.parquet"))).column("a")))


_THREADS_CHILD = r"""
import os, sys, dask
import arrowdev.dask as add
got = add.read_parquet(sys.argv[1], device="cuda", engine="cudf").compute(scheduler="sync")
assert got.num_rows == 100, got.num_rows
print(os.environ.get("KVIKIO_NTHREADS"))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("users", [None, "3"])
def test_gpu_libcudf_reads_with_eight_threads_unless_the_user_chose(tmp_path, users):
    """A worker's first libcudf read sets KvikIO's pool to arrowdev.dask's READ_THREADS (a fresh process, as a
    worker is); a KVIKIO_NTHREADS of the user's own is left as it is."""
    pytest.importorskip("pylibcudf")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.arange(100)}), path)
    env = {k: v for k, v in os.environ.items() if k not in ("KVIKIO_NTHREADS", "KVIKIO_NUM_THREADS")}
    if users is not None:
        env["KVIKIO_NTHREADS"] = users
    out = subprocess.run([sys.executable, "-c", _THREADS_CHILD, str(path)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    from arrowdev.integrations.dask.parquet import READ_THREADS

    assert out.stdout.split()[-1] == (users or str(READ_THREADS))
