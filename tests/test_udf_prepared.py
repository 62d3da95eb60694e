"""Prepared UDF calls (arrowdev/udf/run/prepared_calls.py): a call repeated over GPU columns of one layout skips the
general path's planning, and gives what the general path gives; other layouts still go the general way."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from support.samples import reference


CASES = [
    ("float64", lambda v: v * 2 + 1, pa.array(np.linspace(-3, 3, 1001))),
    ("int8", lambda v: v * 3 - 1, pa.array(np.arange(-100, 100, dtype=np.int8))),
    ("float16", lambda v: v * 2, pa.array(np.linspace(0, 4, 77, dtype=np.float16))),
    ("bool out", lambda v: v > 3, pa.array(np.arange(0, 10, 0.01))),  # bits voted by warps (ballot)
    ("bool in", lambda v: not v, pa.array([True, False, True] * 41)),
    ("string len", lambda s: len(s), pa.array(["ab", "", "été", "x" * 40] * 9)),
    ("large_string", lambda s: s.startswith("a"), pa.array(["ab", "", "ba"] * 9, pa.large_string())),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name, f, data", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("sliced", [False, True])
def test_repeated_calls_take_the_prepared_path_and_agree(name, f, data, sliced, general_calls):
    col = ad.column(data).to_device()
    if sliced:
        col = col.slice(5, len(col) - 9)  # an offset that is not a multiple of 8
    want = reference(f, col)
    first = col.apply(f)  # the general path (unless an earlier test prepared this UDF for this layout)
    second = col.apply(f)  # the general path again: the direct launch is made, the call prepared
    general = len(general_calls)
    assert general <= 2
    results = [col.apply(f) for _ in range(3)]
    assert len(general_calls) == general, "later calls took the general path"
    for got in [first, second, *results]:
        assert got.type == first.type and got.device == col.device and got.to_pylist() == want


@pytest.mark.gpu
def test_two_columns_and_a_closure_value_that_changes(general_calls):
    a = ad.column(pa.array(np.arange(500, dtype=np.float64))).to_device()
    b = ad.column(pa.array(np.arange(500, dtype=np.int32)[::-1].copy())).to_device()
    scale = 2.0

    def f(x, y):
        return x * scale + y
    for _ in range(4):
        got = ad.table({"a": a, "b": b}).apply(f, columns=["a", "b"])
    assert len(general_calls) == 2  # a UDF of its own: prepared after its second call
    assert got.to_pylist() == reference(f, a, b)
    scale = 5.0  # a new closure value: a new kernel, through the general path first
    assert ad.table({"a": a, "b": b}).apply(f, columns=["a", "b"]).to_pylist() == reference(f, a, b)
    assert len(general_calls) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nulls", "chunked", "null_aware", "makes a string"])
def test_other_layouts_go_the_general_way(layout, general_calls):
    data = {"nulls": pa.array([1.0, None, 3.0] * 40), "makes a string": pa.array(["ab", "c"] * 60)}.get(
        layout, pa.array(np.arange(120, dtype=np.float64)))
    col = ad.column(pa.chunked_array([data[:50], data[50:]]) if layout == "chunked" else data).to_device()
    kwargs = {"null_aware": True} if layout == "null_aware" else {}
    f = (lambda s: len(s.upper() + "!")) if layout == "makes a string" else (lambda v: v + 1)
    for _ in range(3):
        assert col.apply(f, **kwargs).to_pylist() == reference(f, col)
    assert len(general_calls) == (6 if layout == "chunked" else 3)


@pytest.mark.gpu
def test_a_prepared_call_waits_for_the_producer_of_its_input():
    """The input is written by a kernel still running on another stream when the call is queued (C7)."""
    import cupy as cp

    x = cp.zeros(2_000_000, dtype=cp.float64)
    col = ad.column(x)
    f = lambda v: v + 1  # noqa: E731
    col.apply(f), col.apply(f)  # prepared from here on
    other = cp.cuda.Stream(non_blocking=True)
    with other:
        for _ in range(20):  # slow enough to still run when the UDF's kernel is queued
            x += 1
        produced = ad.column(x)  # its sync event is recorded on `other`, after the writes
    got = produced.apply(f)
    assert cp.asarray(got).get().tolist() == [21.0] * len(x)


@pytest.mark.gpu
def test_an_input_arrowdev_made_on_its_own_stream_is_not_waited_on(monkeypatch):
    """A UDF's output fed to the next call carries an event recorded on arrowdev's stream, where the next
    kernel runs after it anyway: no stream wait is queued for it (a driver call per input per call); an
    input from another stream still gets its wait."""
    import cupy as cp

    from arrowdev.gpu import runtime

    api = runtime.cupy().cuda.runtime
    waits = []
    stream_wait = api.streamWaitEvent
    monkeypatch.setattr(api, "streamWaitEvent", lambda *a: waits.append(a[1]) or stream_wait(*a))
    f = lambda v: v * 2  # noqa: E731
    made = ad.column(cp.arange(10_000, dtype=cp.float64)).apply(lambda v: v + 1)
    waits.clear()
    for _ in range(3):  # the general path, then prepared calls
        got = made.apply(f)
    assert waits == []
    assert cp.asarray(got).get().tolist() == [(i + 1) * 2.0 for i in range(10_000)]
    other = cp.cuda.Stream(non_blocking=True)
    with other:
        produced = ad.column(cp.arange(10_000, dtype=cp.float64) + 1)  # its event is recorded on `other`
    got = produced.apply(f)
    assert len(waits) == 1
    assert cp.asarray(got).get().tolist() == [(i + 1) * 2.0 for i in range(10_000)]
