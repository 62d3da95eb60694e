"""String UDFs that read strings in place and return numbers or bools: every operation against Python's
``str`` applied row by row, on string, large_string and string_view columns, CPU and GPU."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev.udf.compile import probe
from arrowdev.udf.spec import KernelSpec
from support.samples import DEVICES, STRING_TYPES, on, reference
from support.scripts import AT_ONCE


# ASCII, Latin, CJK and emoji text, empty strings, inline (<= 12 bytes) and out-of-line views, nulls
WORDS = ["", "a", "ab", "abc", "abab", "xaby", "café", "naïve façade", "日本語のテキスト", "emoji 🎉🎉 ok",
         "ÉCOLE", "aaaa", "b", "ba", "abcabcabcabcabc", None, "tail ab", "🎉", "ab🎉ab", "  spaced  "]

UDFS = {
    "len": lambda s: len(s),
    "eq": lambda s: s == "ab",
    "ne": lambda s: s != "café",
    "lt": lambda s: s < "b",
    "ge": lambda s: s >= "ab🎉",
    "in": lambda s: "ab" in s,
    "in_emoji": lambda s: "🎉" in s,
    "startswith": lambda s: s.startswith("ab"),
    "endswith": lambda s: s.endswith("é"),
    "find": lambda s: s.find("a"),
    "rfind": lambda s: s.rfind("ab"),
    "find_cjk": lambda s: s.find("テ"),
    "count": lambda s: s.count("ab"),
    "count_empty": lambda s: s.count(""),
    "combined": lambda s: len(s) * 10 + (1 if s.startswith("a") else 0) + s.count("a"),
}
PREDICATES = ["isalpha", "isalnum", "isdecimal", "isdigit", "isnumeric", "isspace", "isupper", "islower",
              "istitle"]
UDFS.update({name: eval(f"lambda s: s.{name}()") for name in PREDICATES})  # noqa: S307 - fixed names

# characters whose properties are stable across Unicode versions: the tables record the generator's version
TRICKY = ["abc", "ABC", "Abc Def", "Abc def", "123", "١٢٣", "½", "²", " \t\n", "ǅungla", "Ǆ", "ǆ", "ΑΒΓ", "ßtraße",
          "A1B", "x²", "Hello World!", "hELLO", "日本", "٣x", "Ⅻ", "ⅻ", "\u2003", "İstanbul", "ﬁ", "Σίσυφος"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arrow_type", STRING_TYPES, ids=str)
@pytest.mark.parametrize("name", list(UDFS))
def test_each_reading_operation_equals_python_str(device, arrow_type, name):
    f = UDFS[name]
    col = on(device, pa.array(WORDS, arrow_type))
    assert col.apply(f).to_pylist() == reference(f, WORDS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arrow_type", STRING_TYPES, ids=str)
def test_sliced_and_chunked_strings(device, arrow_type):
    arr = pa.array(WORDS * 3, arrow_type).slice(5, 37)
    col = on(device, pa.chunked_array([arr.slice(0, 13), arr.slice(13)]))
    f = UDFS["combined"]
    assert col.apply(f).to_pylist() == reference(f, arr.to_pylist())


@pytest.mark.parametrize("device", DEVICES)
def test_strings_from_two_columns_and_numbers(device):
    names = pa.array(["ann", "bob", None, "日本", "ann"])
    others = pa.array(["ann", "bo", "x", "日本語", None], pa.string_view())
    n = pa.array([1, 5, 2, 7, 3])
    tbl = ad.table({"a": names, "b": others, "n": n})
    if device == "cuda":
        tbl = tbl.to_device()
    same = tbl.apply(lambda a, b: a == b, columns=["a", "b"])
    assert same.to_pylist() == [True, False, None, False, None]
    order = tbl.apply(lambda a, b: b.startswith(a) or a < b, columns=["a", "b"])
    assert order.to_pylist() == [True, False, None, True, None]
    mixed = tbl.apply(lambda a, n: len(a) + n if a.find("n") >= 0 else -n, columns=["a", "n"])
    assert mixed.to_pylist() == [4, -5, None, -7, 6]


@pytest.mark.parametrize("device", DEVICES)
def test_null_aware_strings(device):
    col = on(device, pa.array(["x", None, "yy"]))
    out = col.apply(lambda s: -1 if s is ad.NA else len(s), null_aware=True)
    assert out.to_pylist() == [1, -1, 2]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", PREDICATES)
def test_unicode_predicates_equal_python_str(device, name):
    f = UDFS[name]
    col = on(device, pa.array(TRICKY + [None, ""]))
    assert col.apply(f).to_pylist() == reference(f, TRICKY + [None, ""])


def test_string_literals_keep_their_meaning_in_python():
    from arrowdev.udf.compile.strings import Utf8Constant, with_string_constants

    def udf(s):
        """A docstring stays a docstring."""
        return s.startswith("ab") and "é" in s

    rewritten = with_string_constants(udf)
    assert rewritten.__doc__ == udf.__doc__
    assert any(isinstance(c, Utf8Constant) for c in rewritten.__code__.co_consts)
    assert rewritten("abé") and not rewritten("xé")


@pytest.mark.parametrize("name", list(UDFS))
@pytest.mark.parametrize("kind", ["utf8_32", "utf8_64", "utf8_view"])
def test_reading_udfs_type_and_lower_for_cuda_without_a_gpu(name, kind):
    spec = KernelSpec(((kind, True),), "propagate", "", "cuda")
    assert probe.udf_result_type(UDFS[name], spec) is not None
    aware = KernelSpec(((kind, True),), "aware", "", "cuda")
    assert str(probe.udf_result_type(lambda s: -1 if s is ad.NA else s.count("é"), aware)) == "int64"


text = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list("abé日本🎉 xyz")), max_size=20))


# The needle is captured by the UDFs, so each needle compiles its own kernels: every needle once, with the
# input types taken in turn, and the values drawn anew for each (the kernels compile once per needle instead
# of once per drawn needle and type).
@pytest.mark.parametrize("needle,type_index", [("a", 0), ("ab", 1), ("é", 2), ("日本", 0), ("🎉", 1), ("xyz", 2),
                                               ("", 0)])
@settings(max_examples=6, deadline=None)
@given(values=st.lists(text, max_size=40))
def test_property_of_reading_udfs_cpu(values, needle, type_index):
    _check_property("cpu", values, needle, STRING_TYPES[type_index])


@pytest.mark.gpu
@settings(max_examples=20, deadline=None)
@given(values=st.lists(text, max_size=40), needle=st.sampled_from(["ab", "é", "🎉"]), type_index=st.integers(0, 2))
def test_property_of_reading_udfs_gpu(values, needle, type_index):
    _check_property("cuda", values, needle, STRING_TYPES[type_index])


def _check_property(device, values, needle, arrow_type):
    col = on(device, pa.array(values, arrow_type))
    udfs = [
        lambda s: len(s),
        lambda s: s.count(needle) + s.find(needle) * 100 + s.rfind(needle) * 10_000,  # a captured string
        lambda s: s.startswith(needle) != s.endswith(needle),
        lambda s: (needle in s) == (s < needle),
    ]
    for f in udfs:
        assert col.apply(f).to_pylist() == reference(f, values)


@pytest.mark.parametrize("device", DEVICES)
def test_predicates_of_every_code_point_equal_this_pythons_str(device):
    """Compiled predicates over every code point alone (the tables chosen for this Python's Unicode)."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]

    def bits(s):
        return (s.isalpha() * 1 + s.isalnum() * 2 + s.isdecimal() * 4 + s.isdigit() * 8 + s.isnumeric() * 16
                + s.isspace() * 32 + s.isupper() * 64 + s.islower() * 128 + s.istitle() * 256)

    out = on(device, pa.array(chars)).apply(bits).to_pylist()
    assert out == [bits(c) for c in chars]


# ---- registration: the string extension's own registries, never numba's global ones ----------------------


def _made_by_arrowdev(obj, depth: int = 6, seen: set | None = None) -> bool:
    """Whether a registry entry is arrowdev's: it, or what it holds (a tuple's items, a class's attributes,
    a function's closure, a numba Function type's templates), comes from an arrowdev module."""
    from numba.core import types

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if str(getattr(obj, "__module__", None) or "").startswith("arrowdev"):
        return True
    if depth == 0:
        return False
    if isinstance(obj, (tuple, list)):
        held = list(obj)
    elif isinstance(obj, type):
        held = list(vars(obj).values())
    elif isinstance(obj, types.Function):
        held = list(obj.templates)
    elif callable(obj) and getattr(obj, "__closure__", None):
        held = [cell.cell_contents for cell in obj.__closure__ if cell.cell_contents is not None]
    else:
        held = []
    return any(_made_by_arrowdev(item, depth - 1, seen) for item in held)


def _arrowdev_entries(*registries) -> list:
    fields = ("functions", "attributes", "globals", "getattrs", "setattrs", "casts", "constants")
    return [(field, entry) for registry in registries for field in fields for entry in getattr(registry, field, ())
            if _made_by_arrowdev(entry)]


def test_the_registry_entry_finder_finds_the_string_typing():
    from arrowdev.udf.compile.targets import cpu_target
    from arrowdev.udf.compile.strings.typing import register_typing

    target = cpu_target()  # a target of its own, never installed: its registries are only read here
    register_typing(target)
    found = {field for field, _ in _arrowdev_entries(target.typing_registry)}
    assert found == {"functions", "attributes", "globals"}


def test_string_udfs_add_nothing_to_numbas_global_registries():
    from numba.core import imputils
    from numba.core.typing import templates

    values = ["abc", "Straße", None, "été"]
    col = ad.column(pa.array(values))
    for f in (lambda s: s.upper() + "!", lambda s: s.find("e"), lambda s: s[1:].isalpha(), lambda s: len(s) in (3, 6)):
        assert col.apply(f).to_pylist() == reference(f, values)
    assert _arrowdev_entries(templates.builtin_registry, imputils.builtin_registry) == []


def test_cuda_string_typing_adds_nothing_to_global_registries_without_a_gpu():
    from numba.core import imputils
    from numba.core.typing import templates
    from numba.cuda.core import imputils as cuda_imputils
    from numba.cuda.typing import templates as cuda_templates

    spec = KernelSpec((("utf8_32", True),), "propagate", "", "cuda")
    assert str(probe.udf_result_type(lambda s: s.upper() + "!" if s.startswith("a") else s, spec)) == "ManagedString"
    assert str(probe.udf_result_type(lambda s: len(s) in (3, 6), spec)) == "bool"  # a constant set
    assert _arrowdev_entries(templates.builtin_registry, imputils.builtin_registry, cuda_templates.builtin_registry,
                             cuda_imputils.builtin_registry) == []


def test_threads_registering_the_string_extension_at_once_all_compile():
    """Four threads of a fresh process make their first string UDF together (a Dask worker's threads do):
    the extension registers once, under the compiler lock, and every thread gets Python's result. On the
    GPU machine, without the lock, a thread's compile failed with numba's "generator already executing"."""
    code = AT_ONCE + textwrap.dedent("""
        import pyarrow as pa, arrowdev as ad
        results = at_once(4, lambda k: ad.column(pa.array(["ab", "ç", None])).apply(lambda s: s.upper() + str(k))
                          .to_pylist())
        assert results == {k: ["AB" + str(k), "Ç" + str(k), None] for k in range(4)}, results
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
