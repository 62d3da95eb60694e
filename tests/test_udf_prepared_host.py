"""Prepared CPU UDF calls (arrowdev/udf/run/prepared_host.py): a call repeated over CPU columns of one layout skips
the general path, gives exactly what the general path gives (values, type, validity, null count) and compiles
nothing new; layouts that need host work after the kernel still go the general way."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.udf.compile import kernels as compiled
from support.samples import reference


def _nulls(values, every=7, type=None):
    return pa.array([None if i % every == 3 else v for i, v in enumerate(values)], type)


CASES = [
    ("float64", lambda v: v * 2 + 1, pa.array(np.linspace(-3, 3, 1001))),
    ("int8 nulls", lambda v: v * 3 - 1, _nulls(np.arange(-100, 100, dtype=np.int8).tolist(), type=pa.int8())),
    ("float16", lambda v: v * 2, pa.array(np.linspace(0, 4, 77, dtype=np.float16))),
    ("bool out", lambda v: v > 3, pa.array(np.arange(0, 10, 0.01))),
    ("bool out nulls", lambda v: v > 3, _nulls(np.arange(0, 10, 0.1).tolist())),
    ("bool in", lambda v: not v, pa.array([True, False, True] * 41)),
    ("string len", lambda s: len(s), _nulls(["ab", "", "été", "x" * 40] * 9)),
    ("large_string", lambda s: s.startswith("a"), pa.array(["ab", "", "ba"] * 9, pa.large_string())),
    ("string_view", lambda s: s.find("b"), _nulls(["ab", "", "bb" * 20] * 9, type=pa.string_view())),
    # new strings (HostStringCall): from string, large_string and string_view inputs, from numbers
    ("strings out", lambda s: s.upper() + "!", pa.array(["ab", "", "été", "x" * 40, "日本"] * 9)),
    ("strings out of large_string", lambda s: s.replace("a", "<>"), pa.array(["ab", "", "aa" * 30] * 9,
                                                                             pa.large_string())),
    ("strings out of string_view", lambda s: s + s, pa.array(["ab", "", "été" * 9] * 9, pa.string_view())),
    ("strings out of numbers", lambda v: "big" if v > 3 else "small", pa.array(np.arange(0, 10, 0.25))),
    ("strings out of nulls", lambda s: s.upper() + "!", _nulls(["ab", "", "été", "x" * 40] * 9)),
]


def _same(got, want_col):
    assert got.type == want_col.type and got.null_count == want_col.null_count
    assert pa.array(got).equals(pa.array(want_col))  # values, validity


@pytest.mark.parametrize("name, f, data", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("sliced", [False, True])
def test_repeated_calls_take_the_prepared_path_and_agree(name, f, data, sliced, general_calls):
    col = ad.column(data)
    if sliced:
        col = col[5:len(col) - 4]  # an offset that is not a multiple of 8
    want = reference(f, col)
    first = col.apply(f)  # the general path (unless an earlier test prepared this UDF for this layout)
    general = len(general_calls)
    assert general <= 1
    kernels = compiled.cache_size()
    results = [col.apply(f) for _ in range(3)]
    assert len(general_calls) == general, "later calls took the general path"
    assert compiled.cache_size() == kernels
    for got in results:
        _same(got, first)
    assert first.to_pylist() == want


@pytest.mark.parametrize("string_type", ["string", "large_string", "string_view"])
def test_prepared_strings_keep_the_asked_type_and_free_nothing_in_use(string_type, general_calls):
    """A prepared string call makes the type asked for; its arena is taken again by the next call only after
    the strings were copied out, so results kept from earlier calls keep their values."""
    col = ad.column(pa.array([f"v{i}" * (i % 5) for i in range(3000)]))
    f = lambda s: s.upper() + "?"  # noqa: E731
    kept = [col.apply(f, string_type=string_type) for _ in range(4)]
    assert len(general_calls) <= 1
    want = [f(v) for v in col.to_pylist()]
    for got in kept:
        assert got.type == getattr(pa, string_type)() and got.null_count == 0
        assert got.to_pylist() == want
        got.to_pyarrow().validate(full=True)


def test_a_prepared_string_calls_arena_kept_for_the_next_is_no_leak(general_calls):
    """A prepared string call keeps its arena for the thread's next call (out of the live counts meanwhile):
    ``leak_check`` around calls that reuse it, and around one whose rows outgrow it, finds nothing live."""
    f = lambda s: s + "!"  # noqa: E731
    short = ad.column(pa.array(["ab", "cde", ""] * 700))
    longer = ad.column(pa.array(["x" * 300, "y"] * 1000))
    short.apply(f)
    short.apply(f)  # prepared now, its arena kept
    with ad.debug.leak_check():
        for col in (short, short, longer, short):
            assert col.apply(f).to_pylist() == [v + "!" for v in col.to_pylist()]
    assert len(general_calls) <= 2  # each layout's first call (the longer column is another)


@pytest.mark.parametrize("string_type", ["string", "large_string"])
def test_a_threads_later_string_calls_make_their_output_in_one_compiled_call(string_type, general_calls, monkeypatch):
    """Once a thread's prepared call kept its arena, its next calls launch into it and make the output (offsets,
    data, validity from the rows' flags) in one compiled call after the kernel (``string_gathers.finish_strings``),
    without the general launch loop; a call whose rows outgrow the arena takes that loop, with the same values."""
    from arrowdev.udf.run import string_results

    loops = []
    loop = string_results.launch_with_arena
    monkeypatch.setattr(string_results, "launch_with_arena", lambda *a, **k: loops.append(1) or loop(*a, **k))
    col = ad.column(_nulls(["ab", "", "été", "x" * 40, "ab"] * 600))
    f = lambda s: s[1] + s.upper() + "!"  # noqa: E731 - s[1] of a string under 2 characters fails: null
    want = [None if v is None or len(v) < 2 else v[1] + v.upper() + "!" for v in col.to_pylist()]
    for _ in range(2):  # the general way, then the prepared call's first launch (it keeps its arena)
        col.apply(f, string_type=string_type)
    before = len(loops)
    for _ in range(3):
        got = col.apply(f, string_type=string_type)
        assert got.to_pylist() == want and got.null_count == want.count(None)
        assert got.type == getattr(pa, string_type)()
        got.to_pyarrow().validate(full=True)
    assert len(loops) == before, "a later call took the general launch loop"
    longer = ad.column(_nulls(["é" * 300 + str(i) for i in range(3000)]))  # the same layout, longer rows
    assert longer.apply(f, string_type=string_type).to_pylist() == [None if v is None else v[1] + v.upper() + "!"
                                                                   for v in longer.to_pylist()]
    assert len(general_calls) <= 1 and len(loops) > before  # outgrew the arena: the loop ran it again, larger


def test_a_call_that_outgrew_its_threads_arena_sizes_the_next_run_from_that_claim(general_calls):
    """Where a thread's kept arena overflows, the general loop's first run is sized from that launch's claim
    (exact here: ``s + "!"`` makes one string a row whatever else failed), so it holds: no re-run on top."""
    from arrowdev.udf.run import string_results

    f = lambda s: s + "!"  # noqa: E731
    short = ad.column(_nulls(["ab", "c", ""] * 800))
    for _ in range(3):  # the general way, the prepared call's first launch, one into its kept arena
        short.apply(f)
    longer = ad.column(_nulls(["x" * 500 + str(i) for i in range(2400)]))
    reruns = string_results.managed_string_stats()["reruns"]
    assert longer.apply(f).to_pylist() == [None if v is None else v + "!" for v in longer.to_pylist()]
    assert string_results.managed_string_stats()["reruns"] == reruns
    assert len(general_calls) <= 1


def test_prepared_strings_of_two_nullable_columns(general_calls):
    a = ad.column(_nulls(["ab", "", "é"] * 300, every=5))
    b = ad.column(_nulls(["x", "yz", ""] * 300, every=4, type=pa.large_string()))[1:]
    t = ad.table({"a": a[:len(b)], "b": b})
    f = lambda s, u: s + "-" + u  # noqa: E731
    want = reference(f, t.column("a"), t.column("b"))
    results = [t.apply(f, columns=["a", "b"]) for _ in range(3)]
    assert len(general_calls) <= 1
    for got in results:
        assert got.to_pylist() == want and got.null_count == want.count(None)
        got.to_pyarrow().validate(full=True)


def test_prepared_strings_make_failed_rows_null(general_calls):
    col = ad.column(pa.array(["abcd", "ab", "", "wxyz"] * 600))  # s[3] raises IndexError in Python: null here
    f = lambda s: s[3] + "-"  # noqa: E731
    results = [col.apply(f) for _ in range(3)]
    assert len(general_calls) <= 1
    for got in results:
        assert got.to_pylist() == ["d-", None, None, "z-"] * 600 and got.null_count == 1200
        got.to_pyarrow().validate(full=True)


def test_large_string_calls_go_the_general_way_in_ranges(general_calls):
    """A prepared string call runs its rows in one arena, so only calls small enough for one take it: a
    longer column goes the general way each time (rows in ranges that bound the call's working set)."""
    from arrowdev.udf.run.prepared_host import HostStringCall

    col = ad.column(pa.array(["ab", "cde"] * (HostStringCall.MAX_ROWS // 2 + 7)))
    f = lambda s: s + "!"  # noqa: E731
    for _ in range(2):
        assert col.apply(f).to_pylist() == [v + "!" for v in col.to_pylist()]
    assert len(general_calls) == 2
    small = col[:1000]
    for _ in range(2):
        assert small.apply(f).to_pylist() == [v + "!" for v in small.to_pylist()]
    assert len(general_calls) == 2  # the layout was prepared by the long calls: the short ones take it


def test_the_prepared_call_compiles_no_second_signature():
    from arrowdev.udf.run import prepared_host

    col = ad.column(_nulls(np.arange(300.0).tolist()))
    f = lambda v: v - 0.5  # noqa: E731
    col.apply(f)
    (call,) = [c for k, c in prepared_host._calls.items() if k[0][0] is f.__code__]
    col.apply(f)
    assert len(call.kernel.overloads) == 1  # same argument types as the general path's call


def test_two_nullable_columns_and_a_closure_value_that_changes(general_calls):
    a = ad.column(_nulls(np.arange(500, dtype=np.float64).tolist(), every=5))
    b = ad.column(_nulls(np.arange(500, dtype=np.int32)[::-1].tolist(), every=3, type=pa.int32()))
    t = ad.table({"a": a, "b": b})
    for scale in (1.0, 2.0, 3.0, 3.0):
        got = t.apply(lambda x, y: x * scale + y, columns=["a", "b"])
        assert got.to_pylist() == reference(lambda x, y: x * scale + y, a, b)
        assert got.null_count == sum(v is None for v in got.to_pylist())
    assert len(general_calls) == 3  # one per closure value; the repeat of 3.0 was prepared


def test_null_aware_calls_are_prepared(general_calls):
    col = ad.column(_nulls(np.arange(100.0).tolist()))
    f = lambda v: -1.0 if v is ad.NA else (ad.NA if v > 90 else v)  # noqa: E731
    want = reference(f, col, null_aware=True)
    results = [col.apply(f, null_aware=True) for _ in range(3)]
    assert len(general_calls) <= 1
    for got in results:
        assert got.to_pylist() == want and got.null_count == want.count(None)


@pytest.mark.parametrize("layout", ["chunked", "strings out, null-aware", "may fail", "misaligned nulls in two",
                                    "empty"])
def test_other_layouts_go_the_general_way(layout, general_calls):
    f, columns = lambda v: v + 1, [ad.column(pa.array(np.arange(64.0)))]
    if layout == "chunked":
        columns = [ad.column(pa.chunked_array([np.arange(8.0), np.arange(8.0)]))]
    elif layout == "strings out, null-aware":  # the UDF decides nulls: the general way
        f, columns = lambda s: "-" if s is ad.NA else s.upper(), [ad.column(_nulls(["a", "b"] * 9))]
    elif layout == "may fail":
        f, columns = lambda s: int(s), [ad.column(pa.array(["1", "x"] * 9))]
    elif layout == "misaligned nulls in two":
        f = lambda x, y: x + y  # noqa: E731
        columns = [ad.column(_nulls(np.arange(64.0).tolist()))[3:], ad.column(_nulls(np.arange(64.0).tolist()))[1:62]]
    elif layout == "empty":
        columns = [ad.column(pa.array([], pa.float64()))]
    t = ad.table({str(i): c for i, c in enumerate(columns)})
    aware = layout == "strings out, null-aware"
    want = [1, None] * 9 if layout == "may fail" else reference(f, *columns, null_aware=aware)  # int("x"): null
    for _ in range(3):
        assert t.apply(f, null_aware=aware).to_pylist() == want
    assert len(general_calls) == 3 * max(1, columns[0].num_chunks) or layout == "empty"
