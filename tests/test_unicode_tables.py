"""The Unicode tables of string UDFs agree with the running Python's ``str`` for every code point; one
generated table per Unicode version, chosen by ``unicodedata.unidata_version``."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from arrowdev.udf.compile.strings import gen_unicode_tables, unicode_data, unicode_tables

SHIPPED = sorted(p.stem for p in gen_unicode_tables.DATA_DIR.glob("ucd_*.py"))


def test_the_running_pythons_unicode_has_its_own_table():
    assert unicode_tables.UNICODE_VERSION == unicodedata.unidata_version
    assert unicode_data.shipped(unicodedata.unidata_version)


def test_tables_equal_this_pythons_str_at_every_code_point():
    assert gen_unicode_tables.disagreements(unicode_data.load()) == []


def test_another_unicode_versions_table_differs_from_this_python():
    """The check above can fail: a table of another Unicode version disagrees with this Python's str."""
    others = [name for name in SHIPPED if name != gen_unicode_tables.module_name(unicodedata.unidata_version)]
    version = unicode_data.load(others[0].removeprefix("ucd_").replace("_", "."))
    assert gen_unicode_tables.disagreements(version) != []


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_table_is_from_the_current_generator_and_names_no_machine_path(name):
    text = (gen_unicode_tables.DATA_DIR / f"{name}.py").read_text()
    version = name.removeprefix("ucd_").replace("_", ".")
    tables = unicode_data.load(version)
    assert tables["UNICODE_VERSION"] == version
    assert tables["GENERATOR_VERSION"] == gen_unicode_tables.GENERATOR_VERSION
    assert re.fullmatch(r"3\.1[0-9]\.\d+", str(tables["PYTHON_VERSION"]))
    assert not re.search(r"/(home|root|usr|tmp|Users|work)/", text)


def test_every_python_310_to_313_has_a_table():
    # 3.10: Unicode 13.0.0, 3.11: 14.0.0, 3.12: 15.0.0, 3.13: 15.1.0 (CPython's unicodedata)
    assert {"ucd_13_0_0", "ucd_14_0_0", "ucd_15_0_0", "ucd_15_1_0"} <= set(SHIPPED)


def test_a_python_without_a_shipped_table_generates_its_own(monkeypatch):
    monkeypatch.setattr(unicode_data, "shipped", lambda version: False)
    generated = unicode_data.load.__wrapped__()
    shipped = unicode_data.load()
    assert {k: v for k, v in generated.items() if k != "PYTHON_VERSION"} == \
        {k: v for k, v in shipped.items() if k != "PYTHON_VERSION"}


def test_the_generator_check_runs_without_arrowdev():
    """What runs under every Python: the generator as a plain script (standard library only)."""
    script = Path(gen_unicode_tables.__file__)
    done = subprocess.run([sys.executable, "-I", str(script), "--check"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stderr


def test_unicode_tables_are_what_the_generator_makes():
    import unicodedata

    from arrowdev.udf.compile.strings import gen_unicode_tables, unicode_tables

    assert unicode_tables.UNICODE_VERSION == unicodedata.unidata_version  # chosen for this Python
    for name, predicate in gen_unicode_tables.PREDICATES.items():
        flat = tuple(v for pair in gen_unicode_tables.ranges(predicate) for v in pair)
        assert getattr(unicode_tables, name) == flat, name


def test_case_tables_are_what_the_generator_makes():
    import unicodedata

    from arrowdev.udf.compile.strings import gen_unicode_tables, unicode_tables

    assert unicode_tables.UNICODE_VERSION == unicodedata.unidata_version  # chosen for this Python
    for name, function in gen_unicode_tables.MAPPINGS.items():
        assert getattr(unicode_tables, name) == tuple(gen_unicode_tables.mapping(function)), name


@pytest.mark.parametrize("name", ["UPPER", "LOWER", "TITLE"])
def test_case_map_indexes_find_every_row_and_nothing_else(name):
    """The direct index of a case map (two loads in compiled code) gives each code point's row, -1 where none."""
    from arrowdev.udf.compile.strings import unicode_tables

    mapping, index = getattr(unicode_tables, f"{name}_MAP"), getattr(unicode_tables, f"{name}_INDEX")
    rows = {code: row for row, code in enumerate(mapping[0::4])}

    def slot_of(code):  # what operations._slot_of computes
        block = code >> 7
        if block >= index[0] or index[1 + block] < 0:
            return -1
        return index[index[1 + block] + (code & 127)]

    slots = [slot_of(code) for code in range(0x110000)]
    assert [-1 if slot < 0 else slot & 0xFFFFF for slot in slots] == [rows.get(c, -1) for c in range(0x110000)]
    for code, row in rows.items():  # the slot's size and single code point are the mapping's
        mapped = "".join(chr(c) for c in mapping[4 * row + 1:4 * row + 4] if c)
        slot = slots[code]
        assert (slot >> 20) & 15 == len(mapped.encode()), hex(code)
        assert slot >> 32 == (ord(mapped) if len(mapped) == 1 else 0), hex(code)
