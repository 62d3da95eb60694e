"""UDF calls captured as a CUDA graph and replayed (arrowdev/cuda/capture.py): the block's outputs are what
the calls give; a replay runs the kernels again over new input values, after the caller's queued work; the
graph keeps what its kernels use and lets it go when dropped; calls that cannot be captured say why."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from support.slow_write import slow_write


def test_capture_without_a_gpu_says_what_is_missing():
    if ad.cuda.is_available():
        pytest.skip("this machine has a GPU: the GPU tests below run instead")
    with pytest.raises(ad.DeviceUnavailableError, match="CuPy|CUDA"):
        with ad.cuda.capture():
            pass


def _bytes_in_use() -> int:
    gc.collect()
    ad.cuda.memory.release_finished()
    return ad.cuda.memory_stats()["bytes_in_use"]


@pytest.mark.gpu
def test_captured_calls_run_once_and_replay_over_new_inputs():
    import cupy as cp

    from arrowdev.gpu import runtime

    n = 50_000
    values = cp.arange(n, dtype=cp.int64)
    x = ad.column(values)  # zero-copy: writing `values` writes x
    f, g = (lambda v: v * 2), (lambda v: v - 3)
    for _ in range(2):  # warm up: compile, then prepare both layouts
        x.apply(f).apply(g)
    with ad.cuda.capture() as graph:
        y = x.apply(f)
        z = y.apply(g)
    assert z.to_pylist() == [2 * i - 3 for i in range(n)]  # the block's outputs: run once when it ended
    y_address = y.__cuda_array_interface__["data"][0]
    del y  # the graph still writes it at every replay: it must stay allocated
    eager = x.apply(f)
    assert eager.__cuda_array_interface__["data"][0] != y_address
    slow = cp.cuda.Stream(non_blocking=True)
    with slow:  # new inputs written by a slow kernel on the caller's current stream: the replay waits for it
        slow_write(cp, values, slow)
        graph.replay()
    assert z.to_pylist() == [2 * (i + 1000) - 3 for i in range(n)]
    values[:] = 7
    graph.replay()
    graph.replay()
    assert z.to_pylist() == [11] * n
    assert runtime.captures == {}


@pytest.mark.gpu
def test_a_graph_lets_its_buffers_go_when_dropped():
    import cupy as cp

    x = ad.column(cp.arange(10_000, dtype=cp.float64))
    f = lambda v: v + 0.5  # noqa: E731
    x.apply(f), x.apply(f)
    before = _bytes_in_use()
    with ad.cuda.capture() as graph:
        y = x.apply(f).apply(f)
    graph.replay()
    assert y.to_pylist()[:2] == [1.0, 2.0]
    assert _bytes_in_use() >= before + 2 * 80_000  # the intermediate is kept by the graph
    del y
    assert _bytes_in_use() >= before + 2 * 80_000  # ... and the output's buffer too
    del graph
    cp.cuda.runtime.deviceSynchronize()
    assert _bytes_in_use() == before


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["not called before", "nulls", "makes strings", "stream given"])
def test_a_call_that_cannot_be_captured_says_why_and_leaves_the_device_usable(case):
    import cupy as cp

    from arrowdev.gpu import runtime

    numbers = ad.column(cp.arange(1000, dtype=cp.float64))
    strings = ad.column(pa.array(["ab", "cd"] * 500)).to_device()
    with_nulls = ad.column(pa.array([1.0, None] * 500)).to_device()
    column, f, kwargs, reason = {
        "not called before": (numbers, lambda v: v * 3, {}, "call it twice first"),
        "nulls": (with_nulls, lambda v: v * 3, {}, "one chunk without nulls"),
        "makes strings": (strings, lambda s: s + "!", {}, "host work after the kernel"),
        "stream given": (numbers, lambda v: v * 3, {"stream": cp.cuda.Stream(non_blocking=True)}, "stream"),
    }[case]
    if case in ("nulls", "makes strings"):
        column.apply(f), column.apply(f)  # warmed up: the layout itself is what cannot be captured
    with pytest.raises(ad.CaptureError, match=reason):
        with ad.cuda.capture() as graph:
            column.apply(f, **kwargs)
    with pytest.raises(ad.CaptureError, match="no captured work"):
        graph.replay()
    assert runtime.captures == {}
    assert numbers.apply(lambda v: v + 1).to_pylist()[:3] == [1.0, 2.0, 3.0]  # the stream works as before


@pytest.mark.gpu
def test_captures_do_not_nest():
    import cupy as cp

    x = ad.column(cp.arange(100, dtype=cp.float64))
    with pytest.raises(ad.CaptureError, match="already open"):
        with ad.cuda.capture():
            with ad.cuda.capture():
                pass
    assert np.array_equal(cp.asnumpy(cp.asarray(x.apply(lambda v: v * 2))), np.arange(100) * 2.0)


@pytest.mark.gpu
@pytest.mark.parametrize("operation", ["to_host", "cupy view", "to_device"])
def test_other_work_inside_a_capture_is_refused(operation):
    """Copies, exports and reads inside the block would be recorded half (host work at capture time only)
    or read outputs not computed yet: they raise CaptureError, and the device works as before afterwards."""
    import cupy as cp

    from arrowdev.gpu import runtime

    x = ad.column(cp.arange(1000, dtype=cp.float64))
    f = lambda v: v * 5  # noqa: E731
    x.apply(f), x.apply(f)
    host = ad.column(pa.array(np.arange(1000.0)))
    with pytest.raises(ad.CaptureError, match="only UDF calls"):
        with ad.cuda.capture():
            y = x.apply(f)
            {"to_host": lambda: y.to_host(), "cupy view": lambda: cp.asarray(y),
             "to_device": lambda: host.to_device()}[operation]()
    assert runtime.captures == {}
    assert x.apply(f).to_pylist()[:3] == [0.0, 5.0, 10.0]


@pytest.mark.gpu
def test_a_table_call_over_two_columns_replays_with_a_bool_output():
    """A row-wise call over two columns whose output is bools (voted into bits by warps) replays like a
    numeric one: its output follows the inputs written in place."""
    import cupy as cp

    n = 10_000
    a, b = cp.arange(n, dtype=cp.float64), cp.full(n, 5000.0)
    t = ad.table({"a": ad.column(a), "b": ad.column(b)})
    f = lambda x, y: x * 2 > y  # noqa: E731
    for _ in range(2):
        t.apply(f, columns=["a", "b"])
    with ad.cuda.capture() as graph:
        out = t.apply(f, columns=["a", "b"])
    assert out.to_pylist() == [2 * i > 5000 for i in range(n)]
    b[:] = 100.0
    graph.replay()
    assert out.to_pylist() == [2 * i > 100 for i in range(n)]
