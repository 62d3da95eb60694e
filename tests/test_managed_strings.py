"""String UDFs that make strings (managed strings from the arena) or parse them: every operation against
Python's ``str`` row by row, every output string type, arena overflow, MemInfo counts and leaks, CPU and GPU.
A row where Python raises (``int("x")``, ``s[99]``, ``s.index("absent")``) must come back null."""

from __future__ import annotations

import gc
import itertools
import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev.udf.compile import probe
from arrowdev.udf.spec import KernelSpec
from arrowdev.udf.run import string_results as results
from support.samples import DEVICES, STRING_TYPES, on

OUTPUT_TYPES = ["string", "large_string", "string_view"]

# cuDF's public string-UDF test data (python/cudf/cudf/tests/test_udf_masked_ops.py / strings_udf tests)
CUDF_STRINGS = ["abc", "ABC", "AbC", "123", "123aBc", "123@.!", "", "rapids ai", "gpu", "True", "False", "1.234",
                ".123a", "0.013", "1.0", "01", "20010101", "cudf", "cuda", "gpu", "This Is A Title",
                "This is Not a Title", "Neither is This a Title", "NoT a TiTlE", "123 Title Works"]
CUDF_SUBSTRINGS = ["c", "cu", "2", "abc", "", "gpu"]
# case mapping that changes lengths, final sigma, titlecase digraphs, dotted I, ligatures, CJK, emoji, spaces
TRICKY = ["straße", "ΟΔΟΣ", "ὈΔΥΣΣΕΎΣ Σ", "Σ", "aΣ b", "ΣΣ", "aΣΣ", "aΣ.b", "aΣ'", "ΌΣΟΣ ΣΑΣ!", "ǆungla ǅ Ǆ", "İstanbul", "ﬁne ŉ", "日本語のテキスト",
          "emoji 🎉🎉 ok", "  \t spaced \n ", "-42", "+7", "١٢٣", " 1_000 ", "1__0", "9223372036854775807",
          "-9223372036854775808", "9223372036854775808", "3.25", "-1e-3", "inf", "-Infinity", "nan", "1_0.5",
          "1e400", ".5", "5.", "e5", "café", "hello world", "a-b_c d", None]
VALUES = CUDF_STRINGS + TRICKY

UDFS = {
    "upper": lambda s: s.upper(),
    "lower": lambda s: s.lower(),
    "swapcase": lambda s: s.swapcase(),
    "title": lambda s: s.title(),
    "capitalize": lambda s: s.capitalize(),
    "strip": lambda s: s.strip(),
    "lstrip": lambda s: s.lstrip(),
    "rstrip": lambda s: s.rstrip(),
    "strip_chars": lambda s: s.strip("a1-"),
    "lstrip_chars": lambda s: s.lstrip("Tt日 "),
    "rstrip_chars": lambda s: s.rstrip("s🎉 "),
    "concat": lambda s: s + "abc",
    "concat_left": lambda s: "é-" + s,
    "concat_self": lambda s: s + s,
    "repeat": lambda s: s * 3,
    "repeat_left": lambda s: 2 * s,
    "repeat_none": lambda s: s * -1,
    "replace": lambda s: s.replace("a", "bb"),
    "replace_shrink": lambda s: s.replace("Title", "T"),
    "replace_count": lambda s: s.replace("1", "one", 1),
    "replace_empty": lambda s: s.replace("", "-"),
    "replace_empty_count": lambda s: s.replace("", "|", 2),
    "slice": lambda s: s[1:4],
    "slice_negative": lambda s: s[-3:],
    "slice_step": lambda s: s[::2],
    "slice_reverse": lambda s: s[::-1],
    "index_char": lambda s: s[0],
    "index_last": lambda s: s[-1],
    "zfill": lambda s: s.zfill(6),
    "ljust": lambda s: s.ljust(9),
    "rjust": lambda s: s.rjust(9, "*"),
    "center": lambda s: s.center(10, "é"),
    "center_odd": lambda s: s.center(7),
    "str_len": lambda s: str(len(s) - 3),
    "int": lambda s: int(s),
    "float": lambda s: float(s),
    "index": lambda s: s.index("a"),
    "rindex": lambda s: s.rindex("1"),
    "chained": lambda s: (s.strip().upper() + "|" + s[:2].lower()).replace("A", "@"),
    "len_of_new": lambda s: len(s.upper()) * 100 + s.upper().count("S"),
    "issue_example": lambda s: (s.upper() if len(s) > 2 else s + s) + "abc",
    "branch_view_or_new": lambda s: s if len(s) > 3 else s.lower(),
    "literal_result": lambda s: "long literal text" if len(s) > 3 else "x",
}


def python(f, value):
    """What Python gives for one row: None for a null or where Python raises."""
    if value is None:
        return None
    try:
        return f(value)
    except (ValueError, IndexError, OverflowError, TypeError):
        return None


def reference(f, values):
    out = [python(f, v) for v in values]
    if f is UDFS["int"]:  # int64 results: Python's unbounded ints beyond int64 fail the row
        out = [None if r is not None and not -2**63 <= r < 2**63 else r for r in out]
    return comparable(out)


def comparable(values):
    """NaN made equal to itself, so result lists compare with ``==``."""
    return ["NaN" if isinstance(v, float) and v != v else v for v in values]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arrow_type", STRING_TYPES, ids=str)
@pytest.mark.parametrize("name", list(UDFS))
def test_each_making_or_parsing_operation_equals_python_str(device, arrow_type, name):
    f = UDFS[name]
    col = on(device, pa.array(VALUES, arrow_type))
    assert comparable(col.apply(f).to_pylist()) == reference(f, VALUES)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("output", OUTPUT_TYPES)
@pytest.mark.parametrize("arrow_type", STRING_TYPES, ids=str)
def test_every_output_type_from_every_input_type(device, output, arrow_type):
    arr = pa.array(VALUES * 2, arrow_type).slice(3, 45)
    col = on(device, pa.chunked_array([arr.slice(0, 17), arr.slice(17)]))
    f = UDFS["issue_example"]
    out = col.apply(f, string_type=output)
    assert str(out.type) == output and out.num_chunks == 2
    assert out.to_pylist() == reference(f, arr.to_pylist())
    host = pa.array(out.to_host() if device == "cuda" else out)  # the Arrow C Device Data round trip
    assert host.type == getattr(pa, output)() and host.to_pylist() == reference(f, arr.to_pylist())


@pytest.mark.parametrize("device", DEVICES)
def test_out_type_chooses_the_string_type_too(device):
    col = on(device, pa.array(["a", None, "bcd"]))
    out = col.apply(lambda s: s * 2, out_type=pa.large_string())
    assert str(out.type) == "large_string" and out.to_pylist() == ["aa", None, "bcdbcd"]
    with pytest.raises(TypeError, match="string_type"):
        col.apply(lambda s: s * 2, string_type="utf8")


@pytest.mark.parametrize("device", DEVICES)
def test_table_udf_returning_a_column_value_or_a_new_string(device):
    tbl = ad.table({"name": pa.array(["Ann", "BOB", None, "Zoë", "ΣΑΣ"]), "n": pa.array([5, 1, 4, 2, None])})
    if device == "cuda":
        tbl = tbl.to_device()
    out = tbl.apply(lambda name, n: name if n > 3 else name.lower(), columns=["name", "n"])
    assert out.to_pylist() == ["Ann", "bob", None, "zoë", None]
    aware = tbl.apply(lambda name, n: "?" if name is ad.NA else (name * n if n is not ad.NA else ad.NA),
                      columns=["name", "n"], null_aware=True, string_type="string_view")
    assert aware.to_pylist() == ["AnnAnnAnnAnnAnn", "BOB", "?", "ZoëZoë", None]


@pytest.mark.parametrize("device", DEVICES)
def test_two_string_columns_joined(device):
    tbl = ad.table({"a": pa.array(["x", None, "日本", ""]), "b": pa.array(["1", "2", "語", None], pa.string_view())})
    if device == "cuda":
        tbl = tbl.to_device()
    out = tbl.apply(lambda a, b: a + "-" + b + a, columns=["a", "b"], string_type="large_string")
    assert out.to_pylist() == ["x-1x", None, "日本-語日本", None]


@pytest.mark.parametrize("output", OUTPUT_TYPES)
def test_outputs_go_to_polars_and_nanoarrow(output):
    import nanoarrow as na
    import polars as pl

    values = ["hello", None, "a much longer string than twelve bytes", "ß"]
    out = ad.column(pa.array(values)).apply(lambda s: s.upper(), string_type=output)
    expected = [None if v is None else v.upper() for v in values]
    assert pl.Series(out).to_list() == expected
    if output != "string_view":  # nanoarrow 0.9's to_pylist crashes on any string_view with variadic buffers,
        assert na.Array(out).to_pylist() == expected  # PyArrow's own included


@pytest.mark.parametrize("device", DEVICES)
def test_numbers_to_strings(device):
    values = [0, 7, -7, 10, -10, 99, 2**63 - 1, -2**63, None, 123456789]
    col = on(device, pa.array(values, pa.int64()))
    assert col.apply(lambda n: str(n)).to_pylist() == [None if v is None else str(v) for v in values]
    small = on(device, pa.array([1, -2, None], pa.int8()))
    assert small.apply(lambda n: "#" + str(n * 3)).to_pylist() == ["#3", "#-6", None]


@pytest.mark.parametrize("device", DEVICES)
def test_arena_overflow_reruns_and_never_truncates(device, monkeypatch):
    monkeypatch.setattr(results, "initial_capacity", lambda key, n, input_bytes: 64)
    values = ["x" * k for k in range(50)] + [None, "é" * 30]
    col = on(device, pa.array(values))
    before = results.managed_string_stats()["reruns"]
    f = lambda s: (s + "|" + s.upper()) * 2  # noqa: E731
    assert col.apply(f).to_pylist() == reference(f, values)
    assert results.managed_string_stats()["reruns"] > before


def test_large_string_past_the_int32_limit(monkeypatch):
    monkeypatch.setattr(results, "STRING_LIMIT", 100)
    col = ad.column(pa.array(["abcdefghij"] * 8))
    out = col.apply(lambda s: s + s)  # 160 bytes of data: past the (lowered) limit of `string`
    assert str(out.type) == "large_string" and out.to_pylist() == ["abcdefghij" * 2] * 8
    assert str(ad.column(pa.array(["ab"])).apply(lambda s: s + s).type) == "string"


@pytest.mark.parametrize("device", DEVICES)
def test_meminfos_are_balanced_and_released_with_the_output(device, monkeypatch):
    """Every MemInfo ends the launch at a count of one (the arena's own reference: NRT's increfs and
    decrefs through the UDF balanced), and dropping the outputs, in every order, releases all of them."""
    monkeypatch.setattr(results, "check_meminfos", True)
    col = on(device, pa.array(VALUES))
    udfs = [UDFS["issue_example"], UDFS["chained"], UDFS["len_of_new"], lambda s: s[1:].strip() + s.title()]
    for order in itertools.permutations(range(3)):
        with ad.debug.leak_check():
            made = results.managed_string_stats()["meminfos_made"]
            outs = [col.apply(udfs[k % len(udfs)], string_type=OUTPUT_TYPES[k]) for k in range(3)]
            outs.append(col.apply(udfs[2]))  # numbers out, strings made inside
            assert results.managed_string_stats()["meminfos_made"] > made
            for k in order:
                outs[k] = None
            del outs
            gc.collect()
    stats = results.managed_string_stats()
    assert stats["meminfos_made"] == stats["meminfos_released"] and stats["arenas_live"] == 0


def _branchy(s):
    """Allocates one, two or one strings of different sizes in three branches: on a GPU the lanes of a warp
    claim their blocks under different active masks."""
    if len(s) % 3 == 0:
        return s * 2
    if len(s) % 3 == 1:
        return s.upper() + "x"
    return "é" + s


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("output", OUTPUT_TYPES)
def test_strings_made_in_divergent_branches_get_blocks_of_their_own(device, output, monkeypatch):
    """Every block claimed where only some lanes of a warp allocate lies where the arena walk expects it
    (blocks packed, none overlapping: the walk counts them all with their counts at one) and holds its own
    row's bytes; rows of every length from 0 to 40 bytes, a count of rows that is no multiple of 32, a slice
    at an odd offset."""
    monkeypatch.setattr(results, "check_meminfos", True)
    rng = random.Random(7)
    alphabet = "abcXYZ é日🎉"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(41))) for _ in range(5003)]
    values[17] = None
    col = on(device, pa.array(values))[3:]
    made = results.managed_string_stats()["meminfos_made"]
    out = col.apply(_branchy, string_type=output)
    assert out.to_pylist() == reference(_branchy, values[3:])
    expected = sum(2 if len(v) % 3 == 1 else 1 for v in values[3:] if v is not None)
    assert results.managed_string_stats()["meminfos_made"] - made == expected


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("string_type", ["string", "large_string"])
@pytest.mark.parametrize("sizes", [[0, 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 70, None],
                                   [0, 1, 9, 100, 127, 128, 129, 300, 2000, None]], ids=["short", "long"])
def test_gathered_output_has_every_row_where_its_offset_says(device, string_type, sizes):
    """The gather that lays results out as an Arrow string array: rows of 0 to 70 bytes (many shorter than a
    word, some spanning several), runs of empty and null rows, so rows meet at every byte of a word and a warp's
    range starts and ends anywhere; and rows of up to 2000 bytes, so a warp's 32 rows span from a few words to
    tens of kilobytes. The result equals Python's, buffer by buffer through PyArrow."""
    rng = random.Random(11)
    values = []
    for k in range(4099):
        size = rng.choice(sizes)
        size = rng.randrange(sizes[-2]) if size is None else size
        values.append(None if k % 97 == 5 else "".join(rng.choice("ab日") for _ in range(size)))
    col = on(device, pa.array(values))
    out = col.apply(lambda s: s + "", string_type=string_type)
    expected = pa.array(reference(lambda s: s + "", values), type=getattr(pa, string_type)())
    got = out.to_pyarrow()
    got = got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got
    assert got.equals(expected)
    total = sum(len(v.encode()) for v in values if v is not None)
    assert got.buffers()[2].to_pybytes()[:total] == expected.buffers()[2].to_pybytes()[:total]


@pytest.mark.parametrize("device", DEVICES)
def test_the_arena_goes_when_the_output_no_longer_needs_it(device):
    """Every output type: the arena goes back to the pool (stream-ordered) before ``apply`` returns, nothing
    left for a later call to free (the output holds its own compact buffers: string_view's strings of more
    than 12 bytes are gathered too)."""
    col = on(device, pa.array(VALUES))
    before = results.managed_string_stats()["arenas_live"]
    for string_type in ("string", "large_string", "string_view"):
        out = col.apply(lambda s: s.upper() + "!", string_type=string_type)
        assert results.managed_string_stats()["arenas_live"] == before
        assert out.to_pylist() == reference(lambda s: s.upper() + "!", VALUES)


@pytest.mark.gpu
def test_nrt_statistics_balance_on_the_gpu(monkeypatch):
    from numba.cuda import config
    from numba.cuda.memory_management import rtsys

    monkeypatch.setattr(config, "CUDA_NRT_STATS", True)
    col = on("cuda", pa.array(VALUES * 10))
    with ad.debug.leak_check():
        out = col.apply(lambda s: s.swapcase() + "nrt-stats")  # a UDF compiled with statistics on
        assert out.to_pylist() == reference(lambda s: s.swapcase() + "nrt-stats", VALUES * 10)
        del out
    stats = rtsys.get_allocation_stats()
    assert stats.alloc == stats.free and stats.mi_alloc == stats.mi_free  # arena strings never hit device malloc


@pytest.mark.parametrize("name", list(UDFS))
def test_making_udfs_type_for_cuda_without_a_gpu_and_say_if_they_allocate_or_fail(name):
    for kind in ("utf8_32", "utf8_view"):
        for mode in ("propagate", "aware"):
            traits = probe.udf_traits(UDFS[name], KernelSpec(((kind, True),), mode, "", "cuda"))
            assert traits.result is not None
    traits = probe.udf_traits(UDFS["upper"], KernelSpec((("utf8_32", False),), "none", "", "cuda"))
    assert traits.allocates and not traits.may_fail
    traits = probe.udf_traits(UDFS["int"], KernelSpec((("utf8_32", False),), "none", "", "cuda"))
    assert traits.may_fail and not traits.allocates
    traits = probe.udf_traits(UDFS["strip"], KernelSpec((("utf8_32", False),), "none", "", "cuda"))
    assert not traits.allocates  # a slice shares its string's bytes


@pytest.mark.parametrize("device", DEVICES)
def test_cudf_substrings(device):
    """cuDF's substring tests: each substring as a second string column, so the four UDFs compile once for all
    of them (captured, each substring compiled its own four: seconds each); one substring captured too."""
    n = len(CUDF_STRINGS)
    for substring in CUDF_SUBSTRINGS:
        tbl = ad.table({"s": pa.array(CUDF_STRINGS), "sub": pa.array([substring] * n)})
        tbl = tbl.to_device() if device == "cuda" else tbl
        for f in (lambda s, sub: s.replace(sub, "_"), lambda s, sub: s.find(sub) + s.count(sub),
                  lambda s, sub: s.index(sub), lambda s, sub: sub + s.upper() + sub):
            expected = reference(lambda s, f=f, sub=substring: f(s, sub), CUDF_STRINGS)
            assert tbl.apply(f).to_pylist() == expected, substring
    captured = "cu"
    col = on(device, pa.array(CUDF_STRINGS))
    for f in (lambda s: s.replace(captured, "_"), lambda s: s.find(captured) + s.count(captured),
              lambda s: s.index(captured), lambda s: captured + s.upper() + captured):
        assert col.apply(f).to_pylist() == reference(f, CUDF_STRINGS)


text = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list("abAB é É日本🎉ßΣσς1_-. ǅ")), max_size=16))
PROPERTY_UDFS = ["upper", "lower", "swapcase", "title", "capitalize", "strip_chars", "replace", "replace_empty",
                 "slice", "slice_step", "center", "zfill", "int", "chained", "issue_example"]


# Random values through every UDF, from each input type. Compiling is the cost here (about a second a
# kernel): the kernels are those test_each_making_or_parsing_operation_equals_python_str compiled for the same
# types in this worker (output "string", inputs with nulls: every list gets one), and random values go into
# each output type through the kernels test_every_output_type_from_every_input_type compiled, so this test
# adds values, not compiling (drawing the types too compiled up to 18 kernels per UDF).
@pytest.mark.parametrize("type_index", [0, 1, 2])
@settings(max_examples=4, deadline=None)
@given(values=st.lists(text, max_size=30))
def test_property_of_making_udfs_cpu(values, type_index):
    values = [*values, None]
    _check_property("cpu", values, STRING_TYPES[type_index], "string")
    col = on("cpu", pa.array(values, STRING_TYPES[type_index]))
    for output in OUTPUT_TYPES:
        f = UDFS["issue_example"]
        assert col.apply(f, string_type=output).to_pylist() == reference(f, values), output


# On the GPU every input and output type is its own test: each compiles the UDFs once for its types (with NRT,
# seconds each), so the compiling spreads over the test workers instead of one test running for minutes.
@pytest.mark.gpu
@pytest.mark.parametrize("output", OUTPUT_TYPES)
@pytest.mark.parametrize("type_index", [0, 1, 2])
@settings(max_examples=5, deadline=None)
@given(values=st.lists(text, max_size=30))
def test_property_of_making_udfs_gpu(values, type_index, output):
    _check_property("cuda", values, STRING_TYPES[type_index], output)


def _check_property(device, values, arrow_type, output):
    col = on(device, pa.array(values, arrow_type))
    for name in PROPERTY_UDFS:
        f = UDFS[name]
        assert col.apply(f, string_type=output).to_pylist() == reference(f, values), name


@pytest.mark.parametrize("device", DEVICES)
def test_case_mapping_of_every_code_point(device):
    """upper / lower / title / swapcase of each code point alone, and after a cased letter."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    col = on(device, pa.array(chars + ["A" + c for c in chars[::7]]))
    values = chars + ["A" + c for c in chars[::7]]
    for f in (UDFS["upper"], UDFS["lower"], UDFS["title"], UDFS["swapcase"]):
        assert col.apply(f).to_pylist() == [f(v) for v in values]


HARD_FLOATS = ["9007199254740993", "9007199254740993.000000000001", "1e23", "8.98846567431158e307",
               "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9e-324", "2.4703282292062327e-324",
               "2.4703282292062328e-324", "1.7976931348623157e308", "1.7976931348623159e308", "1e-400", "1e400",
               "0.1", "123456789012345678901234567890", "3.14159265358979323846264338327950288", "-0.0",
               "7.2057594037927933e16", "1.797693134862315708145274e+308"]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=10, deadline=None)
@given(numbers=st.lists(st.floats(allow_nan=False), min_size=1, max_size=200),
       style=st.sampled_from(["{!r}", "{:.25g}", "{:.3e}", "{:_.6f}"]))
def test_float_parsing_is_correctly_rounded(device, numbers, style):
    texts = HARD_FLOATS + [style.format(x) for x in numbers]
    out = on(device, pa.array(texts)).apply(lambda s: float(s)).to_pylist()
    assert out == [float(t) for t in texts]


def _struct_fields(source: str, name: str) -> list[tuple[str, str]]:
    """(type, field) of each member of ``struct name { ... }`` in C/C++ source."""
    import re

    body = re.search(r"struct\s+" + name + r"\s*\{(.*?)\};", source, re.S).group(1)
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", body, flags=re.S)
    fields = []
    for member in filter(None, (m.strip() for m in body.split(";"))):
        declared, field = re.match(r"(.*?)(\w+)$", member, re.S).groups()
        fields.append((" ".join(declared.split()), field))
    return fields


def _installed_source(module: str, relative: str) -> str:
    import importlib.util
    from pathlib import Path

    return (Path(importlib.util.find_spec(module).origin).parent / relative).read_text()


@pytest.mark.parametrize("module,relative,extra", [
    ("numba.cuda", "memory_management/nrt.cuh", []),  # numba-cuda's device runtime
    ("numba", "core/runtime/nrt.cpp", ["external_allocator"]),  # numba's CPU runtime
])
def test_meminfo_layout_is_nrts(module, relative, extra):
    """The arena's block header is NRT's MemInfo: the fields in order, each one word, the whole within HEADER."""
    from arrowdev.udf.compile.strings import meminfo_layout as layout

    fields = _struct_fields(_installed_source(module, relative), "MemInfo")
    assert [field for _, field in fields] == [*layout.MEMINFO_FIELDS, *extra]
    for declared, field in fields:  # size_t, pointers and an atomic size_t: one 8-byte word each
        assert "size_t" in declared or "*" in declared or declared.endswith(("_function", "_func")), (declared, field)
    assert len(fields) * layout.WORD <= layout.HEADER
    assert [slot.value for slot in layout.MemInfo] == list(range(len(layout.MEMINFO_FIELDS)))


def test_arena_state_words_are_what_the_kernel_reads():
    from arrowdev.udf.compile.strings import meminfo_layout as layout

    assert layout.STATE_WORDS == 4 and list(layout.ArenaWord) == sorted(layout.ArenaWord)
    col = ad.column(pa.array(["ab", "c"]))
    assert col.apply(lambda s: s.upper() * 3).to_pylist() == ["ABABAB", "CCC"]  # the CPU kernel used them
