"""Memory a UDF call takes (docs/udf.md "Memory"): ranges of rows bounded by a working set, string outputs
built range by range into buffers that grow in place, UDFs on a GPU over host data larger than it, and a
clear MemoryError (nothing leaked) when even the bounded working set does not fit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import arrowdev as ad
from arrowdev.streaming import range_rows
from arrowdev.udf.run import execute

UDFS = {
    "upper": (lambda s: s.upper(), lambda a: pa.array([None if v is None else v.upper() for v in a.to_pylist()])),
    "chain": (lambda s: s.upper().replace("AB", "<>") + "!",
              lambda a: pa.array([None if v is None else v.upper().replace("AB", "<>") + "!" for v in a.to_pylist()])),
    "replace": (lambda s: s.replace("1", "<>"),
                lambda a: pa.array([None if v is None else v.replace("1", "<>") for v in a.to_pylist()])),
}


def strings(n: int, nulls: bool = True) -> pa.Array:
    numbers = pa.array(np.random.default_rng(1).integers(0, 10**12, n))
    text = pc.binary_join_element_wise("ab1", pc.cast(numbers, pa.string()), "")
    if nulls:
        text = pc.if_else(pa.array(np.arange(n) % 11 == 5), pa.nulls(n, pa.string()), text)
    return text


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranges of about 1024-3072 rows: every chunk of a few thousand rows takes several launches."""
    monkeypatch.setattr(execute, "WORKING_SET", 64 << 10)


def test_range_sizes_follow_the_working_set_and_stay_aligned():
    class Spec:  # a plan's spec for a UDF making strings (arena, flags)
        arena, flags, null_mode = True, True, "none"

    class Plan:
        spec, string_out, kernel = Spec(), "string", object()

    from arrowdev.udf.run.buffers import Memory
    from arrowdev.core.types import Device

    mem = Memory(Device.cpu())
    rows = execute.batch_rows(Plan(), [], mem, 10**9)
    assert rows % 1024 == 0 and 0 < rows * 25 <= execute.WORKING_SET
    assert execute.batch_rows(Plan(), [], mem, 100) == 100  # a small chunk is one launch

    class Numeric(Plan):
        class spec:  # noqa: N801
            arena, flags, null_mode = False, False, "none"

    assert execute.batch_rows(Numeric(), [], mem, 10**9) == 10**9  # exact outputs: no ranges needed


def test_ranges_of_streamed_calls_hold_three_ranges_in_the_room():
    assert range_rows(10**6, 8.0, 1 << 30) == 10**6
    rows = range_rows(10**9, 8.0, 1 << 30)
    assert rows % 1024 == 0 and 3 * rows * 8 * 2.25 <= 1 << 30 < 3 * (rows + 1024) * 8 * 2.25 * 1.01
    assert range_rows(10**9, 1e9, 1 << 20) == 1024  # never fewer than 1024 rows


@pytest.mark.parametrize("string_type", ["string", "large_string", "string_view"])
@pytest.mark.parametrize("name", sorted(UDFS))
def test_string_outputs_built_over_many_ranges_equal_python(small_ranges, name, string_type):
    pytest.importorskip("numba")
    source = strings(5000)
    f, expected = UDFS[name]
    out = ad.column(source).apply(f, string_type=string_type)
    assert str(out.type) == string_type and out.num_chunks == 1
    assert out.to_pylist() == expected(source).to_pylist()
    pa.array(out).validate(full=True)


def test_ranges_after_the_first_are_sized_from_what_its_rows_took(monkeypatch):
    """A string UDF's first range is short and runs alone: what its rows took sizes the later ranges, whatever
    the first guess (here 4-8x too little) or the kernel's last call said."""
    pytest.importorskip("numba")
    from arrowdev.udf.run.buffers import Memory

    monkeypatch.setattr(execute, "WORKING_SET", 2 << 20)
    launches: list[int] = []
    launch = Memory.launch
    monkeypatch.setattr(Memory, "launch", lambda self, kernel, n, *args: (launches.append(n), launch(self, kernel, n, *args)))
    source = pa.array(["x" * (100 + i % 50) for i in range(80_000)])
    f = lambda s: s + s + s  # noqa: E731  a new UDF: nothing learned; about 1 KB of strings a row
    out = ad.column(source).apply(f)
    assert out.to_pylist() == [v * 3 for v in source.to_pylist()]
    first = launches[0]
    runs = next(i for i, b in enumerate(launches) if b != first)  # its arena may be outgrown, the range run again
    rest = launches[runs:]
    assert first == 1024  # the chunk's 64th, at most a quarter of a range, in multiples of 1024 rows
    assert first + sum(rest) == len(source) and all(b % 1024 == 0 for b in rest[:-1])
    arena_per_row = 16 + 5 * 124  # s + s, then that + s: two blocks a row (8-byte headers on the CPU)
    assert 1024 < max(rest) and max(rest) * arena_per_row <= execute.WORKING_SET + 0.25 * out.nbytes


def test_null_aware_and_failing_rows_over_many_ranges(small_ranges):
    pytest.importorskip("numba")
    source = strings(5000)
    col = ad.column(source)
    lengths = col.apply(lambda s: -1 if s is ad.NA else len(s), null_aware=True)
    assert lengths.to_pylist() == [-1 if v is None else len(v) for v in source.to_pylist()]
    parsed = col.apply(lambda s: int(s[3:]) if s[-1:] != "7" else int("x"))  # rows ending in 7 fail: null
    assert parsed.to_pylist() == [None if v is None or v.endswith("7") else int(v[3:]) for v in source.to_pylist()]
    assert parsed.null_count == sum(v is None or v.endswith("7") for v in source.to_pylist())


def test_a_string_udf_on_the_cpu_stays_within_the_bound():
    """Peak resident memory growth during one call, in a fresh process: at most 1.25 x the output plus the
    working set (the code before ranges took 7-16x the output here)."""
    pytest.importorskip("numba")
    script = textwrap.dedent("""
        import threading, time, numpy as np, pyarrow as pa, pyarrow.compute as pc, arrowdev as ad
        from arrowdev.udf.run import execute
        execute.WORKING_SET = 16 << 20
        n = 3_000_000
        text = pc.binary_join_element_wise("ab1", pc.cast(pa.array(np.arange(n) * 7919), pa.string()), "")
        col = ad.column(text)
        f = lambda s: s.upper().replace("AB", "<>") + "!"
        col[:2000].apply(f)
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * 4096
        peak, done = [rss()], [False]
        def watch():
            while not done[0]:
                peak[0] = max(peak[0], rss()); time.sleep(0.001)
        before = rss(); t = threading.Thread(target=watch); t.start()
        out = col.apply(f)
        done[0] = True; t.join(); peak[0] = max(peak[0], rss())
        print(peak[0] - before, out.nbytes)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    growth, output = map(int, done.stdout.split())
    assert growth <= 1.25 * output + (64 << 20), (growth, output)  # the working set of 16 MiB, 48 MiB of slack


def test_host_scratch_lends_a_block_again_only_once_every_view_of_it_is_gone():
    from arrowdev.udf.run.buffers import HostScratch

    pool = HostScratch(keep_bytes=8 << 20, min_bytes=1 << 20)
    first = pool.take(3 << 17, np.dtype(np.int64))  # 3 MiB
    address = first.ctypes.data
    part = first[10:20]  # a view, as Memory.part makes them
    del first
    assert pool.free_bytes() == 0  # the view still reads the block
    second = pool.take(3 << 17, np.dtype(np.int64))
    assert second.ctypes.data != address
    del part
    assert pool.free_bytes() == 3 << 20
    again = pool.take((3 << 20) - 8, np.dtype(np.uint8))  # a size the free block fits: its memory again
    assert again.ctypes.data == address and pool.free_bytes() == 0
    del second, again
    assert pool.free_bytes() == 6 << 20
    big = pool.take(7 << 20, np.dtype(np.uint8))  # fits no free block: they are freed before a new one is made
    assert pool.free_bytes() == 0
    del big
    assert pool.free_bytes() == 7 << 20
    small = pool.take(1000, np.dtype(np.uint8))  # under min_bytes: NumPy's own
    assert small.base is None and pool.free_bytes() == 7 << 20


def test_host_scratch_holds_at_most_keep_bytes():
    from arrowdev.udf.run.buffers import HostScratch

    pool = HostScratch(keep_bytes=5 << 20, min_bytes=1 << 20)
    lent = [pool.take(2 << 20, np.dtype(np.uint8)) for _ in range(4)]
    del lent
    assert pool.free_bytes() == 4 << 20  # two blocks of 2 MiB; the third and fourth were freed
    pool.clear()
    assert pool.free_bytes() == 0


def test_a_cpu_string_udf_takes_its_arena_from_the_last_calls_block(monkeypatch):
    """The arena of a CPU string UDF comes from buffers.HOST_SCRATCH, so the next call reuses its pages (fresh
    pages are zeroed by the kernel on first touch: a fifth of the call's time at 10^6 rows)."""
    pytest.importorskip("numba")
    from arrowdev.udf.run import buffers, string_results

    pool = buffers.HostScratch(keep_bytes=64 << 20, min_bytes=1 << 20)
    monkeypatch.setattr(buffers, "HOST_SCRATCH", pool)
    arenas = []
    real = string_results.Arena.__init__

    def recording(self, mem, capacity):
        real(self, mem, capacity)
        arenas.append((self.base, capacity))
    monkeypatch.setattr(string_results.Arena, "__init__", recording)
    col = ad.column(pa.array([f"word{i}" for i in range(100_000)]))
    first = col.apply(lambda s: s + "!")
    second = col.apply(lambda s: s + "!")
    assert second.to_pylist() == first.to_pylist() == [f"word{i}!" for i in range(100_000)]
    assert len(arenas) == 2 and arenas[0][1] >= 1 << 20 and arenas[1][0] == arenas[0][0]
    assert pool.free_bytes() >= arenas[0][1]  # back in the pool once the call returned


# ---- GPU ------------------------------------------------------------------------------------------


def _bound(output: int) -> float:
    return 1.25 * output + (256 << 20)


def _peak_of(call):
    """(result, peak bytes above those in use before) with CuPy's allocations counted too."""
    import cupy

    from arrowdev.gpu import memory

    cupy.cuda.set_allocator(memory.accounted_malloc)
    try:
        cupy.cuda.Device().synchronize()
        before = ad.cuda.memory_stats()["bytes_in_use"]
        ad.cuda.reset_peak()
        out = call()
        cupy.cuda.Device().synchronize()
        return out, ad.cuda.memory_stats()["peak_bytes"] - before
    finally:
        cupy.cuda.set_allocator(None)


@pytest.mark.gpu
@pytest.mark.parametrize("string_type", ["string", "large_string", "string_view"])
def test_gpu_string_outputs_over_many_ranges_equal_python(small_ranges, string_type):
    """Pipelined ranges (each range's validity packed into the bitmap by its finishing kernel; the last range's
    rows not a whole number of bytes), nulls in and, null-aware, nulls made."""
    source = strings(20003)
    for f, expected in UDFS.values():
        out = ad.column(source).to_device().apply(f, string_type=string_type)
        assert out.to_pylist() == expected(source).to_pylist()
        assert out.null_count == expected(source).null_count
    marked = ad.column(source).to_device().apply(lambda s: ad.NA if s is ad.NA or s[-1:] == "3" else s + "!",
                                                 null_aware=True, string_type=string_type)
    want = [None if v is None or v.endswith("3") else v + "!" for v in source.to_pylist()]
    assert marked.to_pylist() == want
    assert marked.null_count == sum(v is None for v in want)


@pytest.mark.gpu
@pytest.mark.parametrize("string_type", ["string", "large_string"])
@pytest.mark.parametrize("epochs", ["every range its own", "reused every other range"])
def test_gpu_ranges_of_many_tiles_equal_python(monkeypatch, string_type, epochs):
    """A pipelined range's offsets come from its tiles, each learning the bytes before it from the tiles before
    (string_gathers.gather_range's look-back): ranges of some 30 tiles, rows of 0 to 300 bytes (a tile's bytes
    from a few KiB to hundreds), nulls in and nulls made (each tile packs its rows' validity), against Python,
    offsets checked by PyArrow; with the tiles' words' epochs reused every other range, those are cleared first."""
    from arrowdev.udf.run import string_gathers

    monkeypatch.setattr(execute, "WORKING_SET", 3 << 20)
    if epochs != "every range its own":
        monkeypatch.setattr(string_gathers, "EPOCHS", 2)
    rng = np.random.default_rng(7)
    n = 200_003
    sizes = np.where(rng.random(n) < 0.002, 300, rng.integers(0, 24, n))
    values = [None if i % 13 == 4 else "xy1z"[i % 4] * int(size) for i, size in enumerate(sizes)]
    source = pa.array(values, pa.string())
    col = ad.column(source).to_device()
    for _ in range(2):  # the second call's ranges sized from the first's rows
        out = col.apply(lambda s: ad.NA if s is ad.NA or s[:1] == "z" else s.upper() + "!", null_aware=True,
                        string_type=string_type)
        arrow = out.to_pyarrow().combine_chunks()
        arrow.validate(full=True)
        want = [None if v is None or v[:1] == "z" else v.upper() + "!" for v in values]
        assert out.to_pylist() == want
        assert out.null_count == arrow.null_count == sum(v is None for v in want)


def _waits_of(call):
    """(result, {kind: count}) of the host's waits for the GPU while ``call`` runs: stream synchronisations
    (a CuPy ``get`` makes one) and synchronous copies."""
    cupy = pytest.importorskip("cupy")
    counts = {"synchronize": 0, "memcpy": 0}
    sync, memcpy = cupy.cuda.Stream.synchronize, cupy.cuda.runtime.memcpy

    def counted_sync(self, *args, **kwargs):
        counts["synchronize"] += 1
        return sync(self, *args, **kwargs)

    def counted_memcpy(*args, **kwargs):
        counts["memcpy"] += 1
        return memcpy(*args, **kwargs)
    cupy.cuda.Stream.synchronize, cupy.cuda.runtime.memcpy = counted_sync, counted_memcpy
    try:
        return call(), counts
    finally:
        cupy.cuda.Stream.synchronize, cupy.cuda.runtime.memcpy = sync, memcpy


@pytest.mark.gpu
@pytest.mark.parametrize("nulls", [False, True])
def test_gpu_a_one_range_string_udf_waits_for_the_gpu_once(nulls):
    """A string UDF over one range of rows reads the arena's claim, the strings' total bytes and the valid rows
    in one wait (it waited twice for the first two, and its output's null count cost a reader a third)."""
    source = strings(10_000, nulls=nulls)
    col = ad.column(source).to_device()
    f, expected = UDFS["upper"]
    col.apply(f)  # compiled, the kernel's rates learned
    out, waits = _waits_of(lambda: col.apply(f))
    nulls_seen, more = _waits_of(lambda: out.null_count)
    assert waits == {"synchronize": 1, "memcpy": 0}, waits
    assert more == {"synchronize": 0, "memcpy": 0} and nulls_seen == source.null_count, (more, nulls_seen)
    assert out.to_pylist() == expected(source).to_pylist()


@pytest.mark.gpu
@pytest.mark.parametrize("string_type", ["string", "large_string"])
@pytest.mark.parametrize("ranges", ["one range", "several ranges"])
def test_gpu_sizing_a_fresh_string_output_waits_for_nothing(request, ranges, string_type):
    """Dask's ``sizeof`` of a string UDF's output (one range, or several in a pipeline) and its size to send read
    the offsets' ends from what the call knew on the host: no wait for the kernels (that wait was most of
    Dask's ``sizeof`` of a task's result)."""
    cupy = pytest.importorskip("cupy")
    from dask.sizeof import sizeof

    import arrowdev.dask as add

    if ranges == "several ranges":
        request.getfixturevalue("small_ranges")
    rows = 20_000
    source = strings(rows, nulls=False)
    col = ad.column(source).to_device()
    f, expected = UDFS["chain"]
    col.apply(f, string_type=string_type)  # compiled, its rates learned
    out = col.apply(f, string_type=string_type)
    events = []
    wait_event = cupy.cuda.runtime.eventSynchronize
    cupy.cuda.runtime.eventSynchronize = lambda event: (events.append(event), wait_event(event))[1]
    try:
        (size, nbytes), waits = _waits_of(lambda: (sizeof(out), add.nbytes(out)))
    finally:
        cupy.cuda.runtime.eventSynchronize = wait_event
    assert waits == {"synchronize": 0, "memcpy": 0} and events == [], (waits, events)
    data = sum(len(v.encode()) for v in expected(source).to_pylist())  # the output's string bytes
    width = 8 if string_type == "large_string" else 4
    bitmap = (rows + 7) // 8 if any(b.role == "validity" and b.address for b in out.buffers) else 0
    assert nbytes == bitmap + width * (rows + 1) + data and size >= nbytes, (size, nbytes, data, bitmap)
    assert out.to_pylist() == expected(source).to_pylist()


@pytest.mark.gpu
def test_gpu_a_rate_learned_on_another_column_maps_little_past_the_output():
    """The kernel's last call ran over strings 8x longer: the next call's short first range measures this
    column's rate, the later ranges are sized and mapped from it, and the data room grows with the lengths
    measured as ranges complete, so it maps a few ranges' worth too much, not 8x the output."""
    f = lambda s: s + "!"  # noqa: E731
    ad.column(pa.array(["y" * 120] * 300_000)).to_device().apply(f)  # learns about 121 bytes a row
    source = strings(10**7, nulls=False)  # 4 to 15 bytes a row
    col = ad.column(source).to_device()
    out, peak = _peak_of(lambda: col.apply(f))
    data = out.nbytes - 4 * (len(source) + 1)
    assert peak - out.nbytes <= data // 4 + (256 << 20), (peak, out.nbytes)
    for start in np.random.default_rng(4).integers(0, len(source) - 50, 20).tolist():
        assert out[start:start + 50].to_pylist() == [v + "!" for v in source.slice(start, 50).to_pylist()]


@pytest.mark.gpu
def test_gpu_chained_udf_at_1e8_rows_stays_within_the_bound():
    source = strings(10**8, nulls=False)
    col = ad.column(source).to_device()
    f, expected = UDFS["chain"]
    col[:1000].apply(f)
    out, peak = _peak_of(lambda: col.apply(f))
    assert peak <= _bound(out.nbytes), (peak, out.nbytes)
    for start in np.random.default_rng(2).integers(0, 10**8 - 50, 20).tolist():  # samples across the column
        assert out[start:start + 50].to_pylist() == expected(source.slice(start, 50)).to_pylist()


def _libcudf_peak_per_output() -> dict[str, float]:
    """libcudf's peak / output per UDF at 10^8 rows, as ``benchmarks/bench_udf_memory.py`` recorded it (RMM's
    statistics, cuDF beside arrowdev in the same run): the figure arrowdev's peak is held to."""
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).parents[1] / "benchmarks" / "results" / "bench_udf_memory.json").read_text())
    return {row["udf"]: row["libcudf_peak_bytes"] / row["libcudf_output_bytes"] for row in record["rows"]
            if row.get("libcudf_peak_bytes")}


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["upper", "replace"])
def test_gpu_one_operation_at_1e8_rows_peaks_below_libcudf(name):
    """Where libcudf has one kernel for the operation (its peak about 1.2 x its output), a call's range working
    set (execute.WORKING_SET and OUTPUT_SHARE) keeps arrowdev's peak at or below libcudf's."""
    theirs = _libcudf_peak_per_output()[name]
    source = strings(10**8, nulls=False)
    col = ad.column(source).to_device()
    f, expected = UDFS[name]
    col.apply(f)  # the kernel's last call: the later ranges are sized as a user's second call sizes them
    out, peak = _peak_of(lambda: col.apply(f))
    assert peak <= theirs * out.nbytes, (name, peak / out.nbytes, theirs)
    for start in np.random.default_rng(5).integers(0, 10**8 - 50, 10).tolist():
        assert out[start:start + 50].to_pylist() == expected(source.slice(start, 50)).to_pylist()


@pytest.mark.gpu
def test_gpu_a_limit_below_the_old_need_still_completes():
    """The code before ranges sized a string arena of 2 x the input + 96 bytes a row at once (about 1.1 GB
    here, 7x the output): with a limit below that the call completes, within the bound."""
    source = strings(10**7, nulls=False)
    col = ad.column(source).to_device()
    f, expected = UDFS["upper"]
    col[:1000].apply(f)
    in_use = ad.cuda.memory_stats()["bytes_in_use"]
    ad.cuda.set_limit(in_use + (700 << 20))
    try:
        out = col.apply(f)
    finally:
        ad.cuda.set_limit(None)
    assert out.to_pylist()[:5000] == expected(source.slice(0, 5000)).to_pylist()


@pytest.mark.gpu
def test_gpu_running_short_is_a_memory_error_that_leaks_nothing():
    col = ad.column(strings(10**6)).to_device()
    f, expected = UDFS["upper"]
    col[:1000].apply(f)
    in_use = ad.cuda.memory_stats()["bytes_in_use"]
    with ad.debug.leak_check():
        ad.cuda.set_limit(in_use + (1 << 20))
        try:
            with pytest.raises(MemoryError, match="limit"):
                col.apply(f)
        finally:
            ad.cuda.set_limit(None)
    assert col.apply(f).to_pylist()[:100] == expected(pa.array(col.to_pylist()[:100])).to_pylist()


@pytest.mark.gpu
def test_gpu_a_small_result_of_a_streamed_call_stays_on_the_gpu():
    """A predicate over host data larger than the limit: its bits (a sixty-fourth of the input) are expected, from
    the first range, to fit a tenth of the room, so the ranges' results stay where they were made (no pinned
    host buffer a range); a result as large as the input comes back to the host (the test above)."""
    n = 4 * 10**7
    host = ad.table({"a": pa.array(np.arange(n, dtype=np.float64)), "b": pa.array(np.full(n, 2.5e7))})
    f = lambda a, b: a > b  # noqa: E731
    host.slice(0, 1000).apply(f, device="cuda")
    ad.cuda.set_limit(ad.cuda.memory_stats()["bytes_in_use"] + (320 << 20))
    try:
        out = host.apply(f, device="cuda")
    finally:
        ad.cuda.set_limit(None)
    assert out.device.type == "cuda" and out.num_chunks > 1
    assert np.array_equal(np.asarray(pa.chunked_array(out.to_host()).to_numpy(zero_copy_only=False)),
                          np.arange(n) > 2.5e7)


@pytest.mark.gpu
def test_gpu_host_data_larger_than_the_limit_streams_through():
    n = 4 * 10**7  # 320 MB of float64 in, 320 MB out; the limit allows about a quarter of it
    host = ad.column(pa.array(np.arange(n, dtype=np.float64)))
    f = lambda x: x * 2 + 1 if x > 100 else x - 1  # noqa: E731
    host[:1000].apply(f, device="cuda")
    ad.cuda.set_limit(ad.cuda.memory_stats()["bytes_in_use"] + (160 << 20))
    try:
        out = host.apply(f, device="cuda")
    finally:
        ad.cuda.set_limit(None)
    assert out.device.is_cpu_readable and out.num_chunks > 1
    values = np.asarray(pa.chunked_array(out).to_numpy())
    x = np.arange(n, dtype=np.float64)
    assert np.array_equal(values, np.where(x > 100, x * 2 + 1, x - 1))


@pytest.mark.gpu
def test_gpu_host_data_that_fits_leaves_its_result_on_the_gpu():
    host = ad.column(pa.array(["ab", None, "c"]))
    out = host.apply(lambda s: s.upper(), device=0)
    assert out.device.type == "cuda" and out.to_pylist() == ["AB", None, "C"]


@pytest.mark.gpu
def test_gpu_ranges_that_outgrow_the_first_ranges_estimate_run_again(small_ranges):
    """The pipelined ranges are sized from the first range: here later rows are 100 times longer, so their
    arena and the data's room run out; the flagged ranges run again, one by one, with the same values."""
    values = ["a"] * 3000 + ["b" * 200 + str(i) for i in range(6000)]
    source = pa.array(values)
    out = ad.column(source).to_device().apply(lambda s: s.upper() + "!")
    assert out.to_pylist() == [v.upper() + "!" for v in values]
    nulls = pa.array([None if i % 7 == 0 else v for i, v in enumerate(values)])
    out = ad.column(nulls).to_device().apply(lambda s: s + s, string_type="large_string")
    assert out.to_pylist() == [None if v is None else v + v for v in nulls.to_pylist()]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_offsets_are_int64_from_the_first_range_when_the_data_will_pass_int32(device, small_ranges, monkeypatch):
    """Widening int32 offsets once the data passes 2^31 - 1 bytes holds both offset arrays beside the data made so
    far (at 10^9 rows 12 GB more than the output: over the bound). The first range's rows (or the kernel's last
    call) predict it: the offsets are widened then, or made int64 from the start. A lowered limit shows it."""
    from arrowdev.udf.run import string_results as results
    from arrowdev.udf.run import string_sink

    widened = []
    real = string_sink.StringSink.widen

    def spy(self):
        widened.append(self.total)
        real(self)
    monkeypatch.setattr(string_sink.StringSink, "widen", spy)
    monkeypatch.setattr(results, "STRING_LIMIT", 60_000)
    col = ad.column(strings(8000, nulls=False))
    if device == "cuda":
        col = col.to_device()
    f = lambda s: s + "!"  # noqa: E731
    out = col.apply(f)  # about 14 bytes a row: 112,000 bytes, past the lowered limit after about 4,300 rows
    assert str(out.type) == "large_string"
    assert out.to_pylist() == [v + "!" for v in strings(8000, nulls=False).to_pylist()]
    assert len(widened) == 1 and widened[0] < 60_000 / 2  # widened after the first range, not at the limit
    again = col.apply(f)  # the kernel's last call says so: int64 offsets from the start, no widening
    assert str(again.type) == "large_string" and len(widened) == 1
    assert str(col[:100].apply(f).type) == "string"  # a short column of the same kernel stays string
