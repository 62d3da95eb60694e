"""The C binding's layers (capsules/py_*.c, py_*.h), read from the source: no circle, each file
including what it uses and only that, and a core that knows no Python.

Each binding concept is one ``py_X.c`` / ``py_X.h`` pair. A file *uses* another when it names a
function or a variable that the other ``.c`` defines (not ``static``): a call, a method table entry or
a type object. The C is parsed lightly (comments and strings dropped, braces counted), which is
enough for capsules/' style; a parse that finds nothing fails the sanity test below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from arrowdev import _capsules
from arrowdev.core.from_arrow import _PROTOCOLS

CAPSULES = Path(__file__).resolve().parent.parent / "capsules"
CORE = ("container", "check", "format", "schema", "stream")  # the ownership core: plain C, no Python
PYTHON_HEADERS = re.compile(r"^(Python\.h|structmember\.h|py_\w+\.h)$")
ENTRY = "PyInit__capsules"  # the one symbol CPython looks up; declared by no header


def _code(path: Path) -> str:
    """The file without comments and string or character literals (so that names in them do not count)."""
    text = path.read_text()
    pattern = r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    return re.sub(pattern, lambda m: '""' if m.group(0)[0] in "\"'" else " ", text, flags=re.S)


def _includes(path: Path) -> list[str]:
    """The files a source file includes, quoted ("x.h") and angled (<x.h>) alike."""
    return re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', path.read_text(), flags=re.M)


def _top_level(code: str) -> list[str]:
    """The top-level statements of a C file (preprocessor lines dropped): declarations ending in ';' and
    function definitions ending in their body's '}', each with its braces, in order."""
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    after_struct = re.compile(r"\s*(?:[;=,]|\w+\s*(?:\[[^\]]*\]\s*)?[;=,])")  # `} name;`, `} x[n];`, `};`
    out, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and not after_struct.match(code, i + 1):  # a function body ends here
                out.append(code[start:i + 1])
                start = i + 1
        elif ch == ";" and depth == 0:
            out.append(code[start:i + 1])
            start = i + 1
    return [s.strip() for s in out if s.strip()]


def _defined(path: Path) -> set[str]:
    """The functions and variables a .c file defines for other files (not static, not extern)."""
    names = set()
    for statement in _top_level(_code(path)):
        if re.match(r"(static|typedef|extern|enum|struct|union)\b", statement):
            continue
        head = statement.split("=", 1)[0] if "=" in statement.split("{", 1)[0] else statement.split("{", 1)[0]
        function = re.search(r"(\w+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", head.strip().rstrip(";"))
        if function is not None and statement.endswith("}") and "=" not in head:
            names.add(function.group(1))
        elif function is None:
            variable = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*;?\s*$", head.strip().rstrip(";"))
            if variable is not None:
                names.add(variable.group(1))
    return names


def _declared(path: Path) -> set[str]:
    """What a header declares: functions, extern variables, typedef names, struct tags, macros, enumerators."""
    text = path.read_text()
    names = set(re.findall(r"^\s*#\s*define\s+(\w+)", text, flags=re.M))
    code = _code(path)
    names |= set(re.findall(r"\bstruct\s+(\w+)\s*\{", code))
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        names |= set(re.findall(r"(?:^|,)\s*(\w+)", body))
    for statement in _top_level(code):
        if statement.startswith("typedef"):
            names |= set(re.findall(r"(\w+)\s*;$", statement))
            names |= set(re.findall(r"\(\s*\*\s*(\w+)\s*\)", statement))
        elif statement.startswith("extern"):
            names |= set(re.findall(r"(\w+)\s*;$", statement))
        elif not re.match(r"(struct|enum|union)\b", statement):
            function = re.match(r"[^(=]*?\b(\w+)\s*\(", statement)
            names |= {function.group(1)} if function is not None else set()
    names.discard(path.stem.upper())
    return {n for n in names if not re.match(r"ARROWDEV_CAPSULES_\w+_H$", n)}


def _binding() -> dict[str, Path]:
    return {p.stem: p for p in sorted(CAPSULES.glob("py_*.c"))}


def _uses(source: Path, names: set[str]) -> set[str]:
    code = _code(source)
    return {n for n in names if re.search(rf"\b{re.escape(n)}\b", code)}


def _use_graph() -> dict[str, dict[str, set[str]]]:
    """For each binding file X: {Y: the names X uses that Y.c defines}, Y another binding file."""
    files = _binding()
    defined = {stem: _defined(path) for stem, path in files.items()}
    graph: dict[str, dict[str, set[str]]] = {}
    for stem, path in files.items():
        sources = [path] + ([CAPSULES / f"{stem}.h"] if (CAPSULES / f"{stem}.h").exists() else [])
        uses: dict[str, set[str]] = {}
        for other, names in defined.items():
            if other != stem:
                used = set().union(*(_uses(s, names) for s in sources))
                if used:
                    uses[other] = used
        graph[stem] = uses
    return graph


def _include_graph() -> dict[str, set[str]]:
    """For each binding file X: the binding files whose header X.c or X.h includes (X.h itself not counted)."""
    graph: dict[str, set[str]] = {}
    for stem, path in _binding().items():
        sources = [path] + ([CAPSULES / f"{stem}.h"] if (CAPSULES / f"{stem}.h").exists() else [])
        headers = {Path(h).stem for s in sources for h in _includes(s) if h.startswith("py_")}
        graph[stem] = headers - {stem}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of a directed graph as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt] if nxt in path else path + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])) is not None:
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])) is not None:
            return found
    return None


def test_the_parser_sees_the_binding():
    """A sanity check of the light parser: it finds what every binding file is known to define."""
    defined = {stem: _defined(path) for stem, path in _binding().items()}
    everything = set().union(*defined.values())
    for name in ("import_from", "type_schema", "CDeviceArrayType", "ColumnCoreType", "export_stream", ENTRY):
        assert name in everything, f"expected the parser to find {name} in capsules/py_*.c, got {sorted(everything)}"
    assert "hold" in everything and "import_capsule" not in everything  # import_capsule is static
    assert {"Container", "container_incref"} <= _declared(CAPSULES / "container.h")


def test_the_binding_files_use_each_other_without_a_circle():
    """(a) Who uses whom among the py_*.c files (calls, method tables, type objects), and who includes
    whose header, go one way: a contributor can read the binding bottom to top."""
    uses = {stem: set(others) for stem, others in _use_graph().items()}
    cycle = _cycle(uses)
    assert cycle is None, (
        f"expected the binding files to use each other without a circle, got {' -> '.join(cycle or [])} "
        f"(what each uses: { {a: {b: sorted(n) for b, n in o.items()} for a, o in _use_graph().items()} }); "
        "move the shared function down to the lower file's layer")
    cycle = _cycle(_include_graph())
    assert cycle is None, f"expected no circle of includes among capsules/py_*.h, got {' -> '.join(cycle or [])}"


def test_the_core_includes_no_python():
    """(b) The ownership core is plain C: neither its files nor its headers include a Python header or a
    binding header (the binding injects what it needs as a hook, container_set_keepalive_release)."""
    core = [p for p in CAPSULES.glob("*.[ch]") if not p.name.startswith("py_")]
    assert {f"{name}.c" for name in CORE} <= {p.name for p in core}
    bad = {p.name: h for p in core for h in _includes(p) if PYTHON_HEADERS.match(Path(h).name)}
    assert not bad, f"expected the core files to include no Python header, got {bad}; keep Python in capsules/py_*.c"


def test_what_a_binding_file_uses_is_declared_in_the_header_it_includes():
    """(c) A name a py_*.c file uses from another py_Y.c is declared in py_Y.h, and the user includes
    py_Y.h itself (not through another header): the includes say the layering."""
    missing = []
    for stem, others in _use_graph().items():
        direct = {Path(h).name for h in _includes(CAPSULES / f"{stem}.c")}
        if (CAPSULES / f"{stem}.h").exists():
            direct |= {Path(h).name for h in _includes(CAPSULES / f"{stem}.h")}
        for other, names in others.items():
            header = CAPSULES / f"{other}.h"
            declared = _declared(header) if header.exists() else set()
            for name in sorted(names):
                if name not in declared or header.name not in direct:
                    missing.append(f"{stem}.c uses {name} ({other}.c): expected it declared in {header.name}, "
                                   f"included by {stem}.c or {stem}.h")
    assert not missing, "\n".join(missing)


def test_each_binding_file_has_its_own_header_declaring_what_it_shares():
    """One .c/.h pair per concept: py_X.h declares the functions and variables py_X.c shares (and has an
    include guard and a first comment that says what the file is and which layer it sits on)."""
    problems = []
    for stem, path in _binding().items():
        shared = _defined(path) - {ENTRY}
        header = CAPSULES / f"{stem}.h"
        if not shared:
            continue
        if not header.exists():
            problems.append(f"{stem}.c shares {sorted(shared)} but has no {stem}.h")
            continue
        undeclared = shared - _declared(header)
        if undeclared:
            problems.append(f"{stem}.c shares {sorted(undeclared)}, not declared in {stem}.h")
        text = header.read_text()
        guard = f"ARROWDEV_CAPSULES_{stem.upper()}_H"
        if f"#ifndef {guard}" not in text or f"#define {guard}" not in text:
            problems.append(f"{header.name}: expected the include guard {guard}")
        if not text.startswith("/*") or "layer" not in text.split("*/", 1)[0].lower():
            problems.append(f"{header.name}: expected a first comment that names the file's layer")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem", sorted(_binding()))
def test_a_binding_file_includes_only_headers_it_uses(stem):
    """Each binding .c (and its header) includes the capsules/ headers it uses, and no other: an include of
    a header none of whose names the file uses is a false edge in the layering."""
    unused = []
    for source in [CAPSULES / f"{stem}.c", CAPSULES / f"{stem}.h"]:
        if not source.exists():
            continue
        for header in _includes(source):
            path = CAPSULES / header
            if not path.exists() or path.stem == stem:
                continue  # system headers, and a file's own header
            if not _uses(source, _declared(path)):
                unused.append(f"{source.name} includes {header} but uses none of {sorted(_declared(path))[:8]}")
    assert not unused, "\n".join(unused)


# ---- the import protocol order: written once, in Python, walked by import_from too --------------------------

class _Producer:
    """An Arrow producer with the given protocols: the array ones export a PyArrow array, the stream ones
    must not be called (import_from only looks them up)."""

    def __init__(self, *protocols: str):
        self._array = pa.array([1, None, 3])
        for name in protocols:
            setattr(self, name, self._export if "array" in name else self._refuse)

    def _export(self, requested_schema=None):
        return self._array.__arrow_c_device_array__()

    def _refuse(self, *args, **kwargs):
        raise AssertionError("import_from called a protocol it should only have looked up")


def _fast(obj: object) -> bool:
    """True when import_from took its fast path for obj (it returned a type and the held arrays)."""
    found = _capsules.import_from(obj)
    return found is not None and found[0] is not None


def test_import_from_takes_its_fast_path_only_when_the_first_protocol_in_the_order_is_the_device_array():
    assert _PROTOCOLS.index("__arrow_c_device_stream__") < _PROTOCOLS.index("__arrow_c_device_array__")
    assert not _fast(_Producer("__arrow_c_device_stream__", "__arrow_c_device_array__"))
    assert _fast(_Producer("__arrow_c_device_array__", "__arrow_c_stream__", "__arrow_c_array__"))
    assert not _fast(_Producer("__arrow_c_stream__", "__arrow_c_array__"))


def test_import_from_follows_the_order_python_registers():
    """The order lives in arrowdev/core/from_arrow.py only: registered in another order, import_from follows it."""
    both_devices = _Producer("__arrow_c_device_stream__", "__arrow_c_device_array__")
    array_and_stream = _Producer("__arrow_c_device_array__", "__arrow_c_stream__")
    try:
        _capsules.register_protocols(tuple(reversed(_PROTOCOLS)))
        assert _fast(both_devices)  # __arrow_c_device_array__ now comes before __arrow_c_device_stream__
        assert not _fast(array_and_stream)  # and __arrow_c_stream__ before it
        _capsules.register_protocols(("__arrow_c_stream__",))
        assert not _fast(array_and_stream)  # no fast protocol in the order: never the fast path
    finally:
        _capsules.register_protocols(_PROTOCOLS)
    assert _fast(array_and_stream) and not _fast(both_devices)


@pytest.mark.parametrize("order, match", [
    (["__arrow_c_device_array__"], "expected a tuple of protocol names, got list"),
    (("__arrow_c_device_array__", 2), r"expected protocol names \(str\), got int at 1"),
])
def test_register_protocols_refuses_anything_but_a_tuple_of_names_and_keeps_the_order(order, match):
    with pytest.raises(TypeError, match=match):
        _capsules.register_protocols(order)
    assert not _fast(_Producer("__arrow_c_device_stream__", "__arrow_c_device_array__"))
    assert _fast(_Producer("__arrow_c_device_array__"))


def test_the_native_import_names_no_protocol_order():
    """py_import.c names only the protocol its fast path implements; the order is Python's tuple."""
    text = re.sub(r"/\*.*?\*/", " ", (CAPSULES / "py_import.c").read_text(), flags=re.S)
    assert set(re.findall(r'"(__arrow_c_\w+__)"', text)) == {"__arrow_c_device_array__"}
