"""The paths that make host UDFs fast on the CPU: the CPU's own string operations
(arrowdev/udf/compile/strings/cpu_operations.py), its uncounted managed strings (strings/models.py, managed.py),
string_results.LEARN_ROWS, and the prepared calls' recycled buffers and PyArrow runners (udf/run/prepared_host.py,
integrations/batches.py): each gives what Python's ``str`` and the general path give, and the costs they remove
stay removed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev.udf.compile import kernels
from arrowdev.udf.run import string_results
from arrowdev.udf.spec import KernelSpec
from support.samples import reference

# ASCII rows (bytes compared and copied as they are) beside rows of 2, 3 and 4-byte characters
ALPHABET = st.sampled_from(list("aab bXa") + ["é", "日", "🎉", "ab", "ba"])
ROWS = st.lists(st.one_of(st.none(), st.lists(ALPHABET, max_size=12).map("".join)), min_size=1, max_size=60)
NEEDLES = ["a", "ab", "é", "日本", "🎉", "", "zz"]
REPLACEMENTS = ["", "b", "XYZ", "é", "🎉🎉"]


@settings(max_examples=40, deadline=None)
@given(values=ROWS, old=st.sampled_from(NEEDLES), new=st.sampled_from(REPLACEMENTS),
       count=st.sampled_from([None, 0, 1, 2]), string_type=st.sampled_from(["string", "large_string", "string_view"]))
def test_cpu_replace_equals_python(values, old, new, count, string_type):
    """The CPU's replace (a byte loop, no count of characters first) against ``str.replace`` for ASCII and
    non-ASCII rows, every needle length (the empty one goes to the shared version), with and without a count."""
    if count is None:
        def f(s):
            return s.replace(old, new)
    else:
        def f(s):
            return s.replace(old, new, count)
    out = ad.column(pa.array(values, pa.string())).apply(f, string_type=string_type)
    assert out.to_pylist() == reference(f, values)


@settings(max_examples=25, deadline=None)
@given(values=ROWS, suffix=st.sampled_from(["", "!", "é!", "0123456789abcdef"]),
       input_type=st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]))
def test_cpu_concat_equals_python(values, suffix, input_type):
    """The CPU's ``a + b`` (byte loops) for strings of 0 to 40 bytes: inline and out-of-line string_view rows."""
    def f(s):
        return s + suffix + s
    out = ad.column(pa.array(values, input_type)).apply(f)
    assert out.to_pylist() == reference(f, values)


@settings(max_examples=30, deadline=None)
@given(values=ROWS, method=st.sampled_from(["upper", "lower", "swapcase", "title", "capitalize"]),
       string_type=st.sampled_from(["string", "large_string", "string_view"]))
def test_cpu_case_mappings_equal_python(values, method, string_type):
    """The CPU's upper, lower and swapcase (an ASCII row byte by byte; other rows, and title and capitalize, the
    shared version) against ``str``'s, over ASCII rows, rows with 2, 3 and 4-byte characters, and nulls."""
    f = {"upper": lambda s: s.upper() + "|", "lower": lambda s: s.lower() + "|",
         "swapcase": lambda s: s.swapcase() + "|", "title": lambda s: s.title() + "|",
         "capitalize": lambda s: s.capitalize() + "|"}[method]
    out = ad.column(pa.array(values, pa.string())).apply(f, string_type=string_type)
    assert out.to_pylist() == [None if v is None else getattr(v, method)() + "|" for v in values]


def test_cpu_kernels_count_no_string_references():
    """On the CPU the arena owns every string until the host is done with it, and a kernel runs in one thread:
    neither the UDF nor the string operations it calls change a reference count (they were two NRT calls, two
    atomics, a string) or claim arena blocks with an atomic; the kernel counts only its array arguments' (out,
    out_valid, the input's data and bitmap), once a call."""
    import re

    values = ["abc", "été", None, "xyz" * 5]
    f = lambda s: (s.upper() + "!").replace("A", "b") + s[1:]  # noqa: E731
    assert ad.column(pa.array(values)).apply(f).to_pylist() == reference(f, values)
    spec = KernelSpec((("utf8_32", True),), "propagate", "utf8_pairs", "cpu", arena=True, flags=True)
    kernel = kernels.compile_kernel(f, spec)  # the kernel apply runs for these columns
    ir = kernel.inspect_llvm(kernel.signatures[0])
    bodies = {m.group(1): m.group(2) for m in re.finditer(r"define [^\n]*@\"?([^\s(\"]+)\"?\((.*?)\n}\n", ir, re.S)}
    strings = {name: body for name, body in bodies.items() if "strings" in name or "lambda" in name}
    assert len(strings) >= 4  # the UDF, upper, concat, replace, sliced
    for name, body in strings.items():
        assert not re.search(r"@NRT_(incref|decref)|atomicrmw", body), name
    main = next(body for name, body in bodies.items() if name.startswith("_ZN8arrowdev3udf7compile7kernels6kernel"))
    assert len(re.findall(r"call void @NRT_incref", main)) == 4


def test_cpu_arena_blocks_walk(monkeypatch):
    """The CPU's blocks (a size word and the bytes, padded) are packed where the host's walk expects them: as
    many blocks as strings made, none past the bytes claimed."""
    monkeypatch.setattr(string_results, "check_meminfos", True)
    values = ["a" * k for k in range(40)]
    made = string_results.managed_string_stats()["meminfos_made"]
    out = ad.column(pa.array(values)).apply(lambda s: s.upper() + "é")
    assert out.to_pylist() == [v.upper() + "é" for v in values]
    assert string_results.managed_string_stats()["meminfos_made"] - made == 2 * len(values)  # upper, then +


def test_a_small_launch_does_not_set_the_next_arena():
    """A launch of a few rows (Polars' planning call: two empty strings) no longer sets what a row takes, so a
    large launch after it does not outgrow its arena and run twice."""
    def f(s):
        return s.replace("a", "bb")
    big = ad.column(pa.array(["banana", "alpha", "été"] * 2000))
    big.apply(f)  # learns from 6000 rows
    reruns = string_results.managed_string_stats()["reruns"]
    ad.column(pa.array(["", ""])).apply(f)
    assert big.apply(f).to_pylist() == reference(f, ["banana", "alpha", "été"] * 2000)
    assert string_results.managed_string_stats()["reruns"] == reruns


def test_polars_queries_run_each_kernel_once():
    """Each Polars query plans on stand-in rows first; the query's own launch then runs once."""
    pl = pytest.importorskip("polars")
    import arrowdev.polars  # noqa: F401

    df = pl.DataFrame({"s": ["banana", "alpha", "épsilon", None] * 3000})
    expr = ad.polars.udf(lambda s: s.replace("a", "b"), "s")
    df.select(expr)
    reruns = string_results.managed_string_stats()["reruns"]
    for _ in range(3):
        got = df.select(expr).to_series()
    assert got.to_list() == df.select(pl.col("s").str.replace_all("a", "b", literal=True)).to_series().to_list()
    assert string_results.managed_string_stats()["reruns"] == reruns


def test_polars_plans_a_new_expression_of_the_same_function_from_what_it_answered_before():
    """An expression written inline is new each query and Polars plans it again (a call with return_dtype=None
    on stand-in rows): the answer for the same function, options, name, dtypes and rows is the one made
    before; other dtypes, names or options get their own; the queries' results stay right."""
    pl = pytest.importorskip("polars")
    import arrowdev.polars  # noqa: F401

    def f(x):
        return x * 2.0 + 1.0 if x > 0.5 else x - 1.0

    floats, ints = pl.Series("x", [0.5, 1.0]), pl.Series("x", [1, 2])
    first = ad.polars.udf(f)(floats, return_dtype=None)
    assert first.dtype == pl.Float64 and first.null_count() == 2 and first.name == "x"
    assert ad.polars.udf(f)(floats, return_dtype=None) is first  # a new PolarsUDF of the same function
    assert ad.polars.udf(f)(ints, return_dtype=None).dtype == pl.Float64
    assert ad.polars.udf(f)(ints, return_dtype=None) is not first
    assert ad.polars.udf(f)(floats.rename("y"), return_dtype=None).name == "y"
    as_float32 = ad.polars.udf(f, out_type=pl.Float32)(floats, return_dtype=None)
    assert as_float32.dtype == pl.Float32
    df = pl.DataFrame({"x": [0.25, 0.75, None], "n": [1, 2, 3]})
    for _ in range(3):
        assert df.select(ad.polars.udf(f, "x")).to_series().to_list() == [-0.75, 2.5, None]
        assert df.select(ad.polars.udf(f, "n")).to_series().to_list() == [3.0, 5.0, 7.0]


def test_a_type_no_udf_takes_is_refused_after_types_that_passed():
    """The host's types are checked once per set of types that passed: a batch of another set, one the UDF
    cannot take or of the wrong count, is still refused naming the column, however many batches came before."""
    pl = pytest.importorskip("polars")
    import arrowdev.polars  # noqa: F401

    def f(a, b):
        return a + b

    good = pl.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "l": [[1], [2]]})
    for _ in range(3):
        assert good.select(ad.polars.udf(f, "a", "b")).to_series().to_list() == [4.0, 6.0]
    with pytest.raises(Exception, match="'l' of type .*which a UDF cannot take"):
        good.select(ad.polars.udf(f, "a", "l"))
    with pytest.raises(Exception, match="takes 2 argument"):
        good.select(ad.polars.udf(f, "a", "b", "a"))
    assert good.select(ad.polars.udf(f, "a", "b")).to_series().to_list() == [4.0, 6.0]


def test_polars_numbers_without_nulls_go_straight_to_the_kernel_and_stay_right():
    """Series of numbers without nulls reach the prepared call as zero-copy NumPy arrays (ArrowColumns not made):
    results equal Python's for every number type, results kept across calls keep their values (the output
    buffers are recycled only once Polars lets go), a closure's new value is seen, and Series with nulls, bools
    or another dtype take the general way with the same results."""
    pl = pytest.importorskip("polars")
    import arrowdev.polars  # noqa: F401

    k = 2.0

    def f(x, n):
        return x * n + k if x > 0.5 else n - x

    def expected(df):
        return [None if x is None or n is None else (x * n + k if x > 0.5 else n - x)
                for x, n in zip(df["x"].to_list(), df["n"].to_list())]

    rng = np.random.default_rng(5)
    kept = []
    for dtype in (pl.Float64, pl.Float32, pl.Int64, pl.Int32, pl.UInt16):
        df = pl.DataFrame({"x": rng.random(3000), "n": pl.Series(rng.integers(0, 100, 3000)).cast(dtype)})
        for _ in range(3):
            out = df.select(ad.polars.udf(f, "x", "n")).to_series()
            kept.append((out, expected(df)))
    k = -1.0
    df = pl.DataFrame({"x": rng.random(3000), "n": rng.integers(0, 100, 3000)})
    kept.append((df.select(ad.polars.udf(f, "x", "n")).to_series(), expected(df)))
    with_nulls = pl.DataFrame({"x": [0.25, None, 0.75], "n": [1, 2, 3]})
    kept.append((with_nulls.select(ad.polars.udf(f, "x", "n")).to_series(), expected(with_nulls)))
    for got, want in kept:
        values = got.to_list()
        assert [v is None for v in values] == [w is None for w in want]
        assert [v for v in values if v is not None] == pytest.approx([w for w in want if w is not None], rel=1e-6)


def test_recycled_buffers_are_never_written_while_held():
    """A prepared call takes its output buffer from its last calls' only when nothing holds it: results kept by
    the caller keep their values through later calls, and a dropped one's buffer is taken again."""
    from arrowdev.integrations.batches import HostUDF

    udf = HostUDF(lambda x: x * 2 + 1, host="test")
    batches = [pa.array(np.arange(2048, dtype=np.float64) + k) for k in range(8)]
    udf([batches[0]], ["x"], ["double"])  # the general path, which prepares the layout
    udf.pyarrow_call([batches[0]])  # learns the PyArrow type
    kept = [udf.pyarrow_call([b]) for b in batches]
    assert all(r is not None for r in kept)
    for b, r in zip(batches, kept):
        assert r.to_pylist() == (b.to_numpy() * 2 + 1).tolist()
    addresses = {r.buffers()[1].address for r in kept}
    assert len(addresses) == len(kept)  # each held result has a buffer of its own
    del kept, r  # the loop variable held the last result too
    again = [udf.pyarrow_call([batches[0]]) for _ in range(3)]
    reused = {r.buffers()[1].address for r in again}
    assert len(reused) == 3 and reused <= addresses  # freed buffers taken again, none of them twice
    assert all(r.to_pylist() == (batches[0].to_numpy() * 2 + 1).tolist() for r in again)


def test_pyarrow_runner_follows_types_nulls_offsets_and_closures():
    """Batches without nulls go straight to the kernel (``HostUDF.runner``); a batch with nulls, another type, or a
    closure value that changed goes the general way and gives the right result, and the batches after it too."""
    from arrowdev.integrations.batches import HostUDF

    scale = 2.0

    def f(x, k):
        return x * scale + k if x > 0.5 else k

    udf = HostUDF(f, host="test")
    rng = np.random.default_rng(3)
    xs = [pa.array(rng.random(2048)) for _ in range(3)]
    ks = [pa.array(rng.integers(-5, 5, 2048, dtype=np.int32)) for _ in range(3)]

    def check(x, k):
        got = udf.pyarrow_call([x, k])
        if got is None:  # the first batch of a layout: the general path prepares it
            got = pa.array(udf([x, k], ["x", "k"], ["double", "int"]))
        assert got.to_pylist() == reference(f, x.to_pylist(), k.to_pylist())

    for x, k in zip(xs, ks):
        check(x, k)
        check(x, k)
    assert udf.runner is not None
    check(xs[0].slice(5, 999), ks[1].slice(17, 999))  # offsets of their own
    with_nulls = pa.array([None if i % 5 == 0 else v for i, v in enumerate(xs[1].to_pylist())])
    check(with_nulls, ks[2])
    check(xs[2], ks[0])
    scale = -3.0  # the closure's value: part of the UDF's identity
    check(xs[2], ks[0])
    check(xs[1], pa.array(ks[1].to_numpy().astype(np.int64)))  # another type: another kernel


def test_pyarrow_runner_for_bools():
    from arrowdev.integrations.batches import HostUDF

    udf = HostUDF(lambda x: x > 0.25, host="test")
    x = pa.array(np.linspace(0, 1, 2048))
    pa.array(udf([x], ["x"], ["double"]))
    for _ in range(3):
        got = udf.pyarrow_call([x])
    assert udf.runner is not None and got is not None
    assert got.type == pa.bool_() and got.to_pylist() == (x.to_numpy() > 0.25).tolist()
    pick = HostUDF(lambda b, v: v if b else -v, host="test")  # bools in: bits at any offset
    flags = pa.array(np.arange(2048) % 3 == 0)
    pa.array(pick([flags, x], ["b", "v"], ["bool", "double"]))
    for _ in range(2):  # the first learns the PyArrow types, the second prepares the layout and its runner
        pick.pyarrow_call([flags, x])
    assert pick.runner is not None
    got = pick.runner([flags.slice(3, 1000), x.slice(3, 1000)], False)  # the runner itself, not the general path
    assert got is not None
    want = np.where(flags.to_numpy(zero_copy_only=False)[3:1003], x.to_numpy()[3:1003], -x.to_numpy()[3:1003])
    assert got.to_pylist() == want.tolist()


def test_pyarrow_runner_for_string_udfs():
    """UDFs that make strings get a runner too: batches of strings (and numbers) without nulls go straight to the
    prepared call, sliced ones at their offsets; a batch with nulls, of another type, or after a closure value
    changed goes the general way; rows the UDF fails are null. Every result against the Python function."""
    from arrowdev.integrations.batches import HostUDF

    suffix = "!"

    def shout(s, k):
        return s.upper() + suffix * k if k >= 0 else s[k:]

    udf = HostUDF(shout, host="test")
    words = ["ab", "été", "", "xyz" * 5, "Ça"]
    s = pa.array([words[i % 5] for i in range(2048)])
    k = pa.array(np.arange(2048, dtype=np.int64) % 4 - 1)

    def check(s, k):
        got = udf.pyarrow_call([s, k])
        if got is None:  # the first batch of a layout: the general path prepares it
            got = pa.array(udf([s, k], ["s", "k"], ["string", "int64"]))
        assert got.to_pylist() == reference(shout, s.to_pylist(), k.to_pylist())
        return got

    for _ in range(3):
        check(s, k)
    assert udf.runner is not None
    assert udf.runner([s, k], False).to_pylist() == reference(shout, s.to_pylist(), k.to_pylist())
    check(s.slice(7, 1500), k.slice(3, 1500))  # offsets of their own
    check(pa.array([None if i % 9 == 0 else v for i, v in enumerate(s.to_pylist())]), k)
    suffix = "?"  # the closure's value: part of the UDF's identity
    check(s, k)
    large = check(s.cast(pa.large_string()), k)  # another type: another kernel
    assert large.type == pa.string()

    fails = HostUDF(lambda s: s + "!" if len(s) < 4 else s[10], host="test")  # s[10] fails: the row is null
    t = pa.array([("ab", "abcdef", "xyz" * 5)[i % 3] for i in range(2048)])
    for _ in range(3):
        got = fails.pyarrow_call([t])
        if got is None:
            got = pa.array(fails([t], ["s"], ["string"]))
    assert fails.runner is not None
    assert got.to_pylist() == [w + "!" if len(w) < 4 else w[10] if len(w) > 10 else None for w in t.to_pylist()]
    assert got.null_count == sum(1 for w in t.to_pylist() if 4 <= len(w) <= 10)


@pytest.mark.parametrize("f", [lambda s: s.replace("a", "b"), lambda s: s.replace("ab", "X"),
                               lambda s: s.replace("a", "XYZ"), lambda s: s + "!"], ids=["same", "shorter", "longer",
                                                                                         "concat"])
def test_cpu_operations_in_a_full_arena_run_again(f, monkeypatch):
    """A CPU operation whose block does not fit the arena makes an empty string (never bytes past the arena) and
    the launch runs again with an arena as large as it asked for: nothing is truncated."""
    monkeypatch.setattr(string_results, "initial_capacity", lambda key, n, input_bytes: 64)
    monkeypatch.setattr(string_results, "LEARN_ROWS", 10**9)  # every launch starts from the 64 bytes
    values = ["banana", "abab" * 9, "été", "", "xyz"] * 40
    reruns = string_results.managed_string_stats()["reruns"]
    assert ad.column(pa.array(values)).apply(f).to_pylist() == reference(f, values)
    assert string_results.managed_string_stats()["reruns"] > reruns
