"""GPU tests (marker ``gpu``; they skip without a GPU): host/device copies of every type,
zero-copy exchange with CuPy, numba and PyTorch, sync events honoured, one accounted pool."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.core import chunks as _chunked
from support.samples import CASES, LAYOUTS, source_of
from support.slow_write import slow_write

pytestmark = pytest.mark.gpu



@pytest.fixture
def cupy():
    import cupy

    return cupy


def _stats():
    gc.collect()
    ad.cuda.memory.release_finished()
    return ad.cuda.memory_stats()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_host_device_host_round_trip(name, layout):
    source = source_of(name, layout)
    gcol = ad.column(source).to_device()
    assert gcol.device == ad.Device("cuda", 0)
    assert all(b.device.type == "cuda" for b in gcol.buffers)
    back = gcol.to_host()
    assert back.device.type == "cuda_host"
    want = source if isinstance(source, pa.ChunkedArray) else pa.chunked_array([source])
    assert back.to_pyarrow().equals(want)
    assert gcol.null_count == want.null_count
    assert pa.chunked_array(gcol).equals(want)  # CPU protocols copy to host (C8)


TABLE = pa.table({"a": pa.chunked_array([[1, 2], [3, None]]), "s": ["x", None, "zz", "w"],
                  "l": [[1], [], None, [2, 3]]})


def test_table_round_trip_and_cpu_consumers():
    g = ad.table(TABLE).to_device()
    assert g.device.type == "cuda" and {c.device.type for c in g.columns} == {"cuda"}
    assert pa.table(g).equals(TABLE)
    assert g.to_host().to_pyarrow().equals(TABLE)


def test_polars_reads_device_tables():
    pl = pytest.importorskip("polars")
    g = ad.table(TABLE).to_device()
    assert pl.DataFrame(g).to_dict(as_series=False) == pl.DataFrame(TABLE).to_dict(as_series=False)


def test_device_exports_carry_device_and_an_event():
    from support.cabi import ArrowDeviceArray, capsule_pointer

    gcol = ad.column(pa.array([1, 2, 3])).to_device()
    _, capsule = gcol.__arrow_c_device_array__()
    exported = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    assert (exported.device_type, exported.device_id) == (2, 0)
    assert exported.sync_event  # the copy's event: cudaEvent_t*
    stream = ad.column(gcol).__arrow_c_device_stream__()
    assert ad.column(stream).device == ad.Device("cuda", 0)


def test_to_device_allocates_from_the_accounted_pool_and_frees():
    before = _stats()
    gcol = ad.column(pa.array(np.arange(1 << 20, dtype=np.int64))).to_device()
    mid = _stats()
    assert mid["bytes_in_use"] - before["bytes_in_use"] >= 8 << 20
    assert mid["allocations"] > before["allocations"]
    del gcol
    after = _stats()
    assert after["bytes_in_use"] == before["bytes_in_use"]
    assert after["frees"] - before["frees"] == mid["allocations"] - before["allocations"]


def test_a_slice_copies_only_its_rows():
    arr = pa.array(np.arange(1 << 20, dtype=np.int64))
    before = _stats()
    gcol = ad.column(arr.slice(1000, 16)).to_device()
    used = _stats()["bytes_in_use"] - before["bytes_in_use"]
    assert used <= 16 * 8 + 64
    assert gcol.to_pylist() == list(range(1000, 1016))


@pytest.mark.parametrize("piece,slots", [(1 << 20, 3), (8 << 20, 16)])
def test_large_host_copies_go_through_the_staging_ring(piece, slots, monkeypatch):
    """Many more pieces than ring slots (each slot reused many times), several buffers, and a sliced
    large_string whose offsets are rebased piece by piece: the device copy must equal the source."""
    from arrowdev.gpu import staging

    monkeypatch.setattr(staging, "PIECE", piece)
    monkeypatch.setattr(staging, "RING_SLOTS", slots)
    rng = np.random.default_rng(7)
    rows = 3_000_000
    words = pa.array(rng.integers(0, 10**9, rows).astype(str), pa.large_string())
    table = pa.table({"a": rng.integers(-(1 << 60), 1 << 60, rows), "b": rng.random(rows),
                      "s": words}).slice(12345, rows - 20000)
    before = _stats()["pinned_bytes_in_use"]
    gtbl = ad.table(table).to_device()
    back = gtbl.to_host()
    assert pa.table(back).equals(table)
    del gtbl, back
    assert _stats()["pinned_bytes_in_use"] == before  # the ring's buffers went back after the copy


def test_copies_in_a_loop_hold_one_staging_ring_not_one_per_copy(cupy, monkeypatch):
    """A device table made and dropped again and again (a benchmark, a batch job): each copy's staging ring
    goes once its DMAs fired, at the next copy's look at memory.keep_until's list. The dropped table's sync
    event used to be recycled and recorded again by the next copy before that look, so the front entry
    looked pending: pinned memory grew by a ring per copy held, up to the sweep (64 copies), and a copy that
    found no free ring paid for new pinned memory (docs/device.md, "Staging rings held across copies")."""
    from arrowdev.gpu import memory, staging

    src = ad.table(pa.table({"a": np.arange(3_000_000, dtype=np.int64)}))  # 24 MB: 6 pieces, a ring of 6 slots
    ring = min(staging.RING_SLOTS, 6) * staging.PIECE
    before = _stats()["pinned_bytes_in_use"]
    monkeypatch.setattr(memory, "_calls_since_sweep", 0)  # no sweep during the loop
    for _ in range(10):
        out = src.to_device()
        cupy.cuda.runtime.deviceSynchronize()
        del out
    gc.collect()
    held = memory._stats["pinned_bytes_in_use"] - before  # read without memory_stats' sweep
    assert held <= ring, f"{held / ring:.1f} staging rings held after 10 copies, expected at most one"


def test_cupy_views_are_zero_copy(cupy):
    gcol = ad.column(pa.array(np.arange(100, dtype=np.float32))).to_device()
    before = _stats()
    view = cupy.asarray(gcol)
    assert view.data.ptr == gcol.buffers[1].address
    assert _stats()["allocations"] == before["allocations"]
    cupy.testing.assert_array_equal(view, cupy.arange(100, dtype=cupy.float32))
    sliced = cupy.asarray(gcol[10:20])
    assert sliced.data.ptr == gcol.buffers[1].address + 40
    del gcol
    gc.collect()
    assert float(view.sum()) == float(np.arange(100).sum())  # the view keeps the data alive


def test_import_from_cupy_is_zero_copy_and_keeps_the_source(cupy):
    x = cupy.arange(10, dtype=cupy.int32)
    ptr = x.data.ptr
    before = _stats()
    col = ad.column(x)
    assert col.device == ad.Device("cuda", 0) and col.type == ad.DataType.from_arrow(pa.int32())
    assert col.buffers[1].address == ptr
    assert _stats()["allocations"] == before["allocations"]
    del x
    gc.collect()
    assert col.to_pylist() == list(range(10))


class _Owner:
    """A CUDA Array Interface producer that can be watched (weakref) for when arrowdev lets it go."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__


def test_a_copy_to_the_host_lets_its_source_go_once_the_host_has_waited_for_it(cupy):
    import weakref

    owner = _Owner(cupy.arange(1 << 16, dtype=cupy.int64))
    watched = weakref.ref(owner)
    col = ad.column(owner)
    del owner
    slow = cupy.cuda.Stream(non_blocking=True)
    slow_write(cupy, cupy.empty(1, dtype=cupy.int64), slow)  # the copy below queues behind ~0.1 s of spinning
    host = col.to_host(stream=slow)
    del col
    gc.collect()
    assert watched() is not None  # the queued copy still reads it
    assert host.to_pylist()[-3:] == [65533, 65534, 65535]  # the host waits for the copy here
    gc.collect()
    assert watched() is None  # ... and lets the source go then, not at some later arrowdev call


class _OnStream:
    """A CAI producer over ``array``'s memory, read as ``typestr``, whose data is ready after ``stream``'s work."""

    def __init__(self, array, typestr, stream):
        self.array, self.typestr, self.stream = array, typestr, stream

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.array.nbytes,), "typestr": self.typestr, "data": (self.array.data.ptr, False),
                "version": 3, "strides": None, "stream": self.stream.ptr}


@pytest.mark.parametrize("held", ["producer's stream", "CUDA's legacy stream"])
def test_bools_from_a_cuda_array_are_packed_after_their_producers_stream(cupy, held):
    """Bools (a byte each) become Arrow's bits by a copy queued on the producer's stream, after its work, and the
    event consumers wait on is recorded after that copy. (It was made on CuPy's current stream after the event:
    a copy of 2**28 bools read the bits while they were written, half of them wrong.) Held back here: the
    producer, still writing; or CuPy's current stream, where the old code queued the packing, so that a reader
    waiting on the event read the bits before they were made."""
    slow = cupy.cuda.Stream(non_blocking=True)
    raw = cupy.zeros(4096, dtype=cupy.int64)
    if held == "producer's stream":
        slow.wait_event(cupy.cuda.get_current_stream().record())  # the zeros first (held back too, under a hold)
        slow_write(cupy, raw, slow)  # i + 1000 into every item, after ~0.1 s
    else:
        raw[...] = cupy.arange(4096, dtype=cupy.int64) + 1000
        slow.synchronize()
        cupy.cuda.Device().synchronize()
        slow_write(cupy, cupy.empty(1, dtype=cupy.int64), cupy.cuda.Stream.null)
    col = ad.column(_OnStream(raw, "|b1", slow))
    want = (np.arange(4096, dtype="<i8") + 1000).view(np.uint8) != 0
    assert col.to_pylist() == want.tolist()


def test_to_cupy_of_bools_unpacks_after_their_producer_on_cupys_stream(cupy):
    """``to_cupy`` of bools unpacks them on CuPy's current stream, which waits for the producer (still writing
    here, ~0.1 s) without the host waiting."""
    slow = cupy.cuda.Stream(non_blocking=True)
    raw = cupy.zeros(4096, dtype=cupy.int64)
    slow.wait_event(cupy.cuda.get_current_stream().record())  # the zeros first (held back too, under a hold)
    slow_write(cupy, raw, slow)
    got = ad.column(_OnStream(raw, "|b1", slow)).to_cupy()
    want = (np.arange(4096, dtype="<i8") + 1000).view(np.uint8) != 0
    assert got.dtype == cupy.bool_ and got.tolist() == want.tolist()


def test_reads_of_a_columns_offsets_and_bitmaps_wait_for_its_copy(cupy):
    """``nbytes`` reads a string column's last offset, and ``__cuda_array_interface__``'s mask unpacks the
    bitmap: both after the copy that writes them (queued here behind ~0.1 s of spinning), not on CUDA's
    legacy stream, which does not wait for it."""
    strings = pa.array([None if i % 7 == 3 else "x" * (i % 50) for i in range(20_000)])
    numbers = pa.array([None if i % 5 == 2 else i for i in range(20_000)], pa.int64())
    slow = cupy.cuda.Stream(non_blocking=True)
    slow_write(cupy, cupy.empty(1, dtype=cupy.int64), slow)
    on_gpu = ad.column(strings).to_device(stream=slow)
    assert on_gpu.nbytes == ad.column(strings).nbytes
    slow_write(cupy, cupy.empty(1, dtype=cupy.int64), slow)
    col = ad.column(numbers).to_device(stream=slow)
    mask = cupy.asarray(col.__cuda_array_interface__["mask"])
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.asnumpy(mask).tolist() == [i % 5 != 2 for i in range(20_000)]


def test_import_refuses_strided_and_2d(cupy):
    with pytest.raises(ValueError, match="contiguous"):
        ad.column(cupy.arange(10)[::2])
    with pytest.raises(ValueError, match="1-D"):
        ad.column(cupy.zeros((2, 2)))


def test_cai_mask_becomes_validity(cupy):
    class Masked:
        def __init__(self):
            self.data, self.valid = cupy.arange(5, dtype=cupy.int64), cupy.array([1, 0, 1, 1, 0], cupy.bool_)
            cai = dict(self.data.__cuda_array_interface__)
            cai["mask"] = self.valid
            self.__cuda_array_interface__ = cai

    col = ad.column(Masked())
    assert col.null_count == 2
    assert col.to_pylist() == [0, None, 2, 3, None]
    with pytest.raises(Exception):  # CuPy refuses a mask rather than read nulls as values
        cupy.asarray(col)


def test_bool_columns_unpack_on_request(cupy):
    col = ad.column(pa.array([True, False, True, True, False, False, True, False, True])).to_device()
    assert col.to_cupy().tolist() == [True, False, True, True, False, False, True, False, True]
    assert col[3:6].to_cupy().tolist() == [True, False, False]
    with pytest.raises(TypeError, match="bits"):
        col.__cuda_array_interface__
    back = ad.column(cupy.array([True, False, True]))
    assert back.type.id == "bool" and back.to_pylist() == [True, False, True]


def test_dlpack_with_torch_both_ways():
    torch = pytest.importorskip("torch")
    gcol = ad.column(pa.array(np.arange(8, dtype=np.float64))).to_device()
    t = torch.from_dlpack(gcol)
    assert t.device.type == "cuda" and t.data_ptr() == gcol.buffers[1].address
    assert t.tolist() == list(range(8))
    back = ad.column(torch.arange(4, device="cuda", dtype=torch.int64))
    assert back.to_pylist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="nulls"):
        torch.from_dlpack(ad.column(pa.array([1.0, None])).to_device())


def test_numba_both_ways():
    cuda = pytest.importorskip("numba.cuda")
    gcol = ad.column(pa.array(np.arange(6, dtype=np.int32))).to_device()
    view = cuda.as_cuda_array(gcol)
    assert view.copy_to_host().tolist() == list(range(6))
    times = cuda.to_device(np.array(["2020-01-01", "2021-06-30"], dtype="M8[us]"))
    col = ad.column(times)
    assert col.type == ad.DataType.from_arrow(pa.timestamp("us"))
    assert col.to_pyarrow().to_pylist() == pa.array(np.array(["2020-01-01", "2021-06-30"], "M8[us]")).to_pylist()


def test_a_numba_array_without_a_stream_is_read_after_its_copy_from_the_host():
    """numba's to_device names no CAI stream, yet its copy from pageable memory may still be in flight when it
    returns: arrowdev, reading on a stream of its own, must wait for the legacy default stream first."""
    cuda = pytest.importorskip("numba.cuda")
    n = 1 << 22
    for seed in range(20):
        values = np.arange(seed, seed + n, dtype=np.int64)
        darr = cuda.to_device(values)
        assert darr.__cuda_array_interface__.get("stream") is None
        col = ad.column(darr)
        assert _chunked.chunks(col)[0].sync_event  # an event on the legacy default stream
        got = col.to_host().to_numpy()
        assert got[0] == seed and got[-1] == seed + n - 1 and np.array_equal(got, values)


def test_cai_exports_name_a_stream_only_where_there_is_something_to_wait_for(cupy):
    """A column with a producer event names arrowdev's stream (the consumer waits on it); one without, while
    arrowdev's stream is idle, names none (its data is ready); both read right through CuPy."""
    copied = ad.column(pa.array(np.arange(5, dtype=np.int64))).to_device()
    assert _chunked.sync_events(copied) and copied.__cuda_array_interface__["stream"] is not None
    assert cupy.asarray(copied).tolist() == [0, 1, 2, 3, 4]
    data = cupy.arange(7, dtype=cupy.int64)
    cupy.cuda.runtime.deviceSynchronize()
    dtype = ad.DataType.from_arrow(pa.int64())
    ready = ad.ArrowColumn(dtype, [ad._capsules.build(dtype, 7, 0, 0, [0, data.data.ptr], [], device_type=2,
                                                      device_id=0, keepalive=[data])])
    assert not _chunked.sync_events(ready)
    cupy.cuda.runtime.deviceSynchronize()  # nothing left queued on arrowdev's stream
    assert ready.__cuda_array_interface__["stream"] is None
    assert cupy.asarray(ready).tolist() == list(range(7))


def _slow_column(cupy, n: int) -> ad.ArrowColumn:
    """A GPU int64 column [1000, 1000 + n) written by a kernel that first spins on a stream of its own,
    signalling only through its sync event."""
    out = cupy.zeros(n, dtype=cupy.int64)
    cupy.cuda.runtime.deviceSynchronize()
    slow = cupy.cuda.Stream(non_blocking=True)
    slow_write(cupy, out, slow)
    event = ad.cuda.runtime.SyncEvent(slow, 0)
    dtype = ad.DataType.from_arrow(pa.int64())
    held = ad._capsules.build(dtype, n, 0, 0, [0, out.data.ptr], [], device_type=2, device_id=0,
                              keepalive=[out, event], sync_event=event.address)
    return ad.ArrowColumn(dtype, [held])


def test_imports_wait_on_the_producer_event(cupy):
    """A producer writes on a slow stream and only signals through its event: arrowdev must never
    read before it fires (C7)."""
    n = 4096
    for _ in range(3):
        col = _slow_column(cupy, n)
        assert col.to_pylist()[:3] == [1000, 1001, 1002]
        assert _slow_column(cupy, n).to_host().to_pylist()[-1] == 1000 + n - 1


def test_a_table_of_columns_exports_batches_that_wait_on_every_columns_producer(cupy):
    """A table made of GPU columns with producers of their own (a copy, a slow kernel): its record batches
    carry one event that fires after both (an ArrowDeviceArray has one), so consumers and host copies of
    the batches never read early."""
    from support.cabi import ArrowDeviceArray, capsule_pointer

    n = 4096
    for _ in range(2):
        copied = ad.column(pa.array(np.arange(n))).to_device()
        tbl = ad.table({"slow": _slow_column(cupy, n), "copied": copied})
        batch = _chunked.chunks(tbl.to_struct_array())[0]
        events = {_chunked.chunks(col)[0].sync_event for col in tbl.columns}
        assert batch.sync_event and batch.sync_event not in events  # joined: neither column's own
        _, capsule = tbl.__arrow_c_device_array__()
        exported = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
        assert exported.sync_event
        host = ad.table(tbl).to_struct_array().to_host()  # the batches copied: after the joined event
        assert host.to_pylist()[-1] == {"slow": 1000 + n - 1, "copied": n - 1}
    same = ad.table({"a": copied, "b": copied.rename("b")})  # one producer: its event, nothing joined
    assert _chunked.chunks(same.to_struct_array())[0].sync_event == _chunked.chunks(copied)[0].sync_event


def test_cai_stream_is_waited_on(cupy):
    n = 1024
    slow = cupy.cuda.Stream(non_blocking=True)
    out = cupy.zeros(n, dtype=cupy.int64)
    cupy.cuda.runtime.deviceSynchronize()
    slow_write(cupy, out, slow)

    class OnSlowStream:
        __cuda_array_interface__ = {**out.__cuda_array_interface__, "stream": slow.ptr}

    assert ad.column(OnSlowStream()).to_pylist()[0] == 1000


def test_cuda_host_data_is_exported_as_cpu_memory():
    """Pinned host memory is CPU memory: exported as ARROW_DEVICE_CPU (PyPI PyArrow refuses 3)."""
    from support.cabi import ArrowDeviceArray, capsule_pointer

    host = ad.column(pa.array([1, 2, 3])).to_device().to_host()
    assert host.device.type == "cuda_host"
    _, capsule = host.__arrow_c_device_array__()
    exported = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    assert (exported.device_type, exported.device_id, exported.sync_event) == (1, -1, None)
    again = ad.column(host.__arrow_c_device_array__())
    assert again.device.type == "cpu" and again.to_pylist() == [1, 2, 3]
    assert again.to_device().to_pylist() == [1, 2, 3]


@pytest.mark.multi_gpu
def test_device_to_device_between_gpus():
    if ad.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    g0 = ad.column(pa.array(["a", None, "ccc"] * 100)).to_device(0)
    g1 = g0.to_device(1)
    assert g1.device == ad.Device("cuda", 1)
    assert all(b.device == ad.Device("cuda", 1) for b in g1.buffers)
    assert g1.to_pyarrow().equals(g0.to_pyarrow())
    assert g1[1:5].to_device(0).to_pylist() == g0[1:5].to_pylist()  # sliced, back across
    t1 = ad.table(TABLE).to_device(1)
    assert t1.device == ad.Device("cuda", 1) and pa.table(t1).equals(TABLE)
    def double(x):
        return x * 2

    for _ in range(2):  # the first launch goes through numba, the second straight through cuda.core
        doubled = t1["a"].apply(double)
        assert doubled.device == ad.Device("cuda", 1) and doubled.to_pylist() == [2, 4, 6, None]

    def positive(x):
        return x > 0

    values = pa.array([3, -1, 0, 7] * 50)
    expected = [v > 0 for v in values.to_pylist()]
    for device in (0, 1, 1, 0):  # one kernel, launched on each GPU (a module per device)
        assert ad.column(values).to_device(device).apply(positive).to_pylist() == expected


@pytest.mark.gpu
def test_gpu_a_cupy_view_waits_for_the_kernel_that_made_the_column():
    """A CuPy reduction right after a UDF reads the finished output: the view orders CuPy's stream after the
    column's sync event (the scale job's sums once came out as garbage on busy workers)."""
    n = 10**7
    strings = ad.column(pa.array(["x" * (i % 23) for i in range(n)])).to_device()
    expected = sum(i % 23 for i in range(23)) * (n // 23) + sum(i % 23 for i in range(n - n % 23, n))
    for _ in range(3):
        lengths = strings.apply(lambda s: len(s.upper() + "!") - 1)
        assert int(lengths.to_cupy().sum()) == expected


def test_device_bitmaps_are_counted_on_the_device(cupy):
    from arrowdev.gpu import runtime

    rng = np.random.default_rng(7)
    host = rng.integers(0, 256, 5000, dtype=np.uint8)
    dev = cupy.asarray(host)
    bits = np.unpackbits(host, bitorder="little")
    cases = [(o, n) for o in range(9) for n in (1, 2, 7, 8, 9, 15, 16, 17)] + [(3, 39_000), (0, 40_000), (11, 20_011)]
    for offset, length in cases:
        want = int(bits[offset:offset + length].sum())
        assert runtime.count_set_bits(dev.data.ptr, offset, length, 0) == want, (offset, length)


def test_a_device_slice_counts_its_nulls_right_at_any_offset():
    rng = np.random.default_rng(3)
    n = 300_001
    arr = pa.array([None if x else i for i, x in enumerate(rng.random(n) < 0.25)], pa.int64())
    gcol = ad.column(arr).to_device()
    for offset, length in [(0, n), (5, n - 5), (40_003, 200_000), (7, 33_000), (n - 40_000, 40_000)]:
        assert gcol.slice(offset, length).null_count == arr.slice(offset, length).null_count, (offset, length)


def test_a_fresh_string_udf_output_of_a_million_rows_knows_its_null_count():
    rng = np.random.default_rng(5)
    n = 1_000_000
    source = pa.array([None if x else f"r{i}" for i, x in enumerate(rng.random(n) < 0.1)])
    out = ad.column(source).to_device().apply(lambda s: s + "!")
    want = source.null_count
    assert out.null_count == want
    assert out.to_pyarrow().null_count == want


def _many_chunks(rows: int = 40_000, chunk: int = 1_024) -> pa.Table:
    rng = np.random.default_rng(11)
    x = pa.array(np.where(rng.random(rows) < 0.1, np.nan, rng.random(rows)), from_pandas=True)
    s = pa.array([None if i % 13 == 0 else "w" * (i % 7) + str(i) for i in range(rows)])
    flag = pa.array(rng.random(rows) < 0.5)
    words = pa.array(["a", "b", "c"] * (rows // 3) + ["a"] * (rows % 3)).dictionary_encode()
    whole = pa.table({"x": x, "s": s, "flag": flag, "words": words})
    return pa.Table.from_batches(whole.to_batches(max_chunksize=chunk))


def test_a_table_of_many_small_chunks_arrives_on_the_gpu_in_one_chunk_a_column():
    source = _many_chunks()
    g = ad.table(source).to_device()
    # numbers, strings and bools merged; a dictionary column keeps its chunks
    assert [len(c.chunks) for c in g.columns] == [1, 1, 1, source.column("words").num_chunks]
    assert g.to_host().to_pyarrow().equals(source)
    assert [c.null_count for c in g.columns] == [c.null_count for c in source.columns]
    doubled = g.apply(lambda x: x * 2.0, columns=["x"])
    import pyarrow.compute as pc

    assert doubled.to_pylist() == pc.multiply(source.column("x"), 2.0).to_pylist()
    shout = g.apply(lambda s: s + "!", columns=["s"])
    assert shout.to_pylist() == [None if v is None else v + "!" for v in source.column("s").to_pylist()]


def test_rechunk_false_keeps_the_chunks_and_true_merges_a_few():
    source = _many_chunks(rows=4_096, chunk=2_048)
    assert [len(c.chunks) for c in ad.table(source).to_device().columns][:3] == [2, 2, 2]  # few: kept
    assert [len(c.chunks) for c in ad.table(source).to_device(rechunk=True).columns][:3] == [1, 1, 1]
    kept = ad.table(_many_chunks()).to_device(rechunk=False)
    assert [len(c.chunks) for c in kept.columns][:3] == [40, 40, 40]
    assert kept.to_host().to_pyarrow().equals(_many_chunks())
    col = ad.column(_many_chunks().column("s")).to_device()
    assert len(col.chunks) == 1
    assert col.to_pyarrow().equals(pa.chunked_array([_many_chunks().column("s").combine_chunks()]))
