"""The layers as tests: the folders are the layers (docs/architecture.md draws them), imports run one way
between them, counting imports inside functions, under TYPE_CHECKING and of a module's own parent
package; there is no import cycle among arrowdev's modules; no two modules share a name for different
things; and no module reads private state of another module's objects.

The import graph is read from the sources with ``ast``.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys
from functools import cache
from typing import Any

import pytest

import arrowdev

PACKAGE = pathlib.Path(arrowdev.__file__).parent
TESTS = pathlib.Path(__file__).parent
DOCS = PACKAGE.parent / "docs"

# The layers, bottom to top. A module belongs to the entry that names it or its longest enclosing package
# (the package root, ``arrowdev``, only itself); it may import modules of its own layer and of layers below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("native core and errors", ("arrowdev._capsules", "arrowdev.errors", "arrowdev._version")),
    ("CUDA runtime", ("arrowdev.gpu",)),
    ("core", ("arrowdev.core",)),
    ("interop", ("arrowdev.interop",)),
    ("device API", ("arrowdev.cuda",)),
    ("serialization", ("arrowdev.serialize",)),
    ("UDF definitions", ("arrowdev.udf.spec", "arrowdev.udf.na", "arrowdev.udf.deps")),
    ("UDF compile", ("arrowdev.udf.compile",)),
    ("UDF run", ("arrowdev.udf.run",)),
    ("UDF API", ("arrowdev.udf",)),
    ("user objects", ("arrowdev.column", "arrowdev.table", "arrowdev.debug", "arrowdev.streaming")),
    ("engine hosts", ("arrowdev.integrations",)),
    ("public names", ("arrowdev.dask", "arrowdev.ray", "arrowdev.spark", "arrowdev.polars", "arrowdev.duckdb",
                      "arrowdev.pandas", "arrowdev")),
)
# Modules of the same name in different folders that mean the same thing: the public facades of the hosts.
SAME_NAME_SAME_THING = {f"{host}.py": {f"arrowdev/{host}.py", f"arrowdev/integrations/{host}.py"}
                        for host in ("ray", "spark", "polars", "duckdb", "pandas")}

# The native base of ArrowColumn (capsules/py_column.c) holds these; arrowdev.core.chunks is the layer that
# works on them, column.py the class built on them.
NATIVE_FIELDS = {"_type": "arrowdev._capsules", "_chunks": "arrowdev._capsules", "_nulls": "arrowdev._capsules"}
# Modules that may read one another's private names: the user objects, and the native base with its layer.
# tests/test_column.py tests the native base itself (what it holds before anything is computed).
FRIENDS = [{"arrowdev.column", "arrowdev.table"},
           {"arrowdev._capsules", "arrowdev.core.chunks", "arrowdev.column", "tests.test_column"}]


def _module_name(path: pathlib.Path, root: pathlib.Path, prefix: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([prefix, *parts]) if prefix else ".".join(parts)


@cache
def _sources() -> dict[str, tuple[ast.Module, bool]]:
    """arrowdev's modules by name: their syntax tree, and whether the module is a package (the native
    module ``arrowdev._capsules`` has an empty tree: it imports nothing of arrowdev's)."""
    out = {"arrowdev._capsules": (ast.Module(body=[], type_ignores=[]), False)}
    for path in sorted(PACKAGE.rglob("*.py")):
        out[_module_name(path, PACKAGE, "arrowdev")] = (ast.parse(path.read_text(), str(path)),
                                                        path.name == "__init__.py")
    return out


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The arrowdev modules an import statement names (the longest known prefix of each)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
    found = []
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target:
            found.append(target)
    return found


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module -> the arrowdev modules it imports anywhere in its source (functions, TYPE_CHECKING)."""
    sources = _sources()
    known = set(sources)
    graph = {}
    for module, (tree, is_package) in sources.items():
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in _imported(module, is_package, node, known) if t != module)
        graph[module] = frozenset(edges)
    return graph


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []
    tree = ast.parse("def f():\n    from ..column import ArrowColumn\n")
    assert _imported("arrowdev.cuda.ipc", False, tree.body[0].body[0], {"arrowdev.column"}) == ["arrowdev.column"]


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer ``module`` belongs to."""
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or (prefix != "arrowdev" and module.startswith(prefix + "."))
            if inside and len(prefix) > best:
                best, found = len(prefix), i
    if found is None:
        raise AssertionError(f"{module} is in no layer: add its folder to LAYERS (and to docs/architecture.md)")
    return found


def upward_imports(graph: dict[str, frozenset[str]]) -> list[tuple[str, str, str]]:
    """(module, what it imports, the layers) for every import of a layer above the importer's."""
    return sorted((m, t, f"{LAYERS[layer_of(m)][0]} -> {LAYERS[layer_of(t)][0]}")
                  for m, targets in graph.items() for t in targets if layer_of(t) > layer_of(m))


def test_the_layer_rule_finds_an_upward_import_inside_a_function_and_of_a_parent():
    tree = ast.parse("def f():\n    from ...column import ArrowColumn\n    from .. import NA\n")
    known = {"arrowdev.column", "arrowdev.udf", "arrowdev.udf.run.apply"}
    found = [t for node in tree.body[0].body for t in _imported("arrowdev.udf.run.apply", False, node, known)]
    assert found == ["arrowdev.column", "arrowdev.udf"]
    graph = {"arrowdev.udf.run.apply": frozenset(found), "arrowdev.column": frozenset(), "arrowdev.udf": frozenset()}
    assert [(m, t) for m, t, _ in upward_imports(graph)] == [("arrowdev.udf.run.apply", "arrowdev.column"),
                                                            ("arrowdev.udf.run.apply", "arrowdev.udf")]
    assert layer_of("arrowdev.udf.compile.strings.words") == layer_of("arrowdev.udf.compile")
    assert layer_of("arrowdev") > layer_of("arrowdev.integrations.dask.collection") > layer_of("arrowdev.table")


def test_every_module_is_in_a_layer_and_imports_only_its_own_layer_or_below():
    assert upward_imports(import_graph()) == []


def test_no_import_cycle_among_arrowdev_modules():
    assert cycles(dict(import_graph())) == []


def test_no_two_modules_share_a_name_for_different_things():
    by_name: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            by_name.setdefault(path.name, set()).add(path.relative_to(PACKAGE.parent).as_posix())
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert shared == SAME_NAME_SAME_THING


def test_the_architecture_page_names_every_layer_folder():
    page = (DOCS / "architecture.md").read_text()
    for _, prefixes in LAYERS:
        for prefix in prefixes:
            if prefix != "arrowdev" and (PACKAGE.parent / prefix.replace(".", "/")).is_dir():
                assert prefix.replace(".", "/") + "/" in page, prefix


def _recipe_paths() -> list[str]:
    """The files docs/architecture.md's recipes ("Where a change goes") name."""
    page = (DOCS / "architecture.md").read_text()
    recipes = page[page.index("## Where a change goes"):]
    recipes = recipes[:recipes.index("\n## ", 5)] if "\n## " in recipes[5:] else recipes
    return sorted(set(re.findall(r"`((?:arrowdev|capsules|tests|docs|benchmarks)/[\w/.]+)`", recipes)))


def test_the_recipes_name_files_that_exist():
    paths = _recipe_paths()
    assert len(paths) >= 12
    missing = [p for p in paths if not (PACKAGE.parent / p).exists()]
    assert missing == []


# ---- private state --------------------------------------------------------------------------------


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _names_defined_in(body: list[ast.stmt]) -> set[str]:
    """Names the statements of one body define: functions, classes, assignment targets, ``__slots__`` entries."""
    names = set()
    for item in body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets):
                names.update(c.value for c in ast.walk(item.value)
                             if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return names


def _defined_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The private names a module defines: (members of its objects: class members and slots, and
    attributes it assigns on instances, ``self._x = ...``; its module globals)."""
    module_globals, members = _names_defined_in(tree.body), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            members |= _names_defined_in(node.body)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            members.add(node.attr)
    return {n for n in members if _is_private(n)}, {n for n in module_globals if _is_private(n)}


@cache
def _owners() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Private name -> the arrowdev modules that define it: as a member of their objects; as a module global."""
    members: dict[str, set[str]] = {}
    module_globals: dict[str, set[str]] = {}
    for module, (tree, _) in _sources().items():
        own_members, own_globals = _defined_names(tree)
        for name in own_members:
            members.setdefault(name, set()).add(module)
        for name in own_globals:
            module_globals.setdefault(name, set()).add(module)
    for name, module in NATIVE_FIELDS.items():
        members.setdefault(name, set()).add(module)
    return members, module_globals


def _may_read(reader: str, owners: set[str]) -> bool:
    return reader in owners or any(reader in group and group & owners for group in FRIENDS)


def _module_aliases(module: str, tree: ast.Module) -> dict[str, str]:
    """Local name -> arrowdev module, for the modules ``module`` imports as names."""
    known, aliases = set(_sources()), {}
    is_package = module in _sources() and _sources()[module][1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias, target in zip(node.names, _imported(module, is_package, node, known)):
                if target.rpartition(".")[2] == alias.name:
                    aliases[alias.asname or alias.name] = target
    return aliases


def _other_libraries_names(module: str, tree: ast.Module) -> set[str]:
    """Local names bound by imports from outside arrowdev (numba's ``_Kernel``, ``compiler``): their
    private attributes are that library's business."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if not a.name.startswith("arrowdev"))
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("arrowdev"):
            names.update(a.asname or a.name for a in node.names)
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def foreign_private_reads(module: str, tree: ast.Module, globals_too: bool = True) -> list[tuple[str, str]]:
    """(module, ``expr._name``) for each read of a private attribute that another arrowdev module
    defines on its objects (attributes of ``self`` / ``cls`` aside), and with ``globals_too`` of a
    private global of another arrowdev module (``memory._pool``). Names no arrowdev module defines
    are other libraries' (PyArrow's ``_import_from_c_capsule``): not this test's business."""
    (members, module_globals), (own_members, _) = _owners(), _defined_names(tree)
    aliases = _module_aliases(module, tree) if globals_too else {}
    outside = _other_libraries_names(module, tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in ("self", "cls") or _root(value) in outside:
            continue
        if isinstance(value, ast.Name) and value.id in aliases:  # a module's global
            owner = aliases[value.id]
            wrong = owner in module_globals.get(node.attr, ()) and not _may_read(module, {owner})
        else:
            wrong = (node.attr in members and node.attr not in own_members
                     and not _may_read(module, members[node.attr]))
        if wrong:
            found.append((module, f"{ast.unparse(value)}.{node.attr}"))
    return found


def test_the_private_read_finder_finds_a_read_of_a_column_chunk_list():
    tree = ast.parse("from arrowdev.gpu import memory\n"
                     "def f(col):\n    return col._chunks, col.chunks, x._nulls, memory._pool\n")
    assert foreign_private_reads("arrowdev.interop.x", tree) == [
        ("arrowdev.interop.x", "col._chunks"), ("arrowdev.interop.x", "x._nulls"),
        ("arrowdev.interop.x", "memory._pool")]
    assert foreign_private_reads("arrowdev.core.chunks", tree) == [("arrowdev.core.chunks", "memory._pool")]


def test_no_module_reads_private_state_of_another_modules_objects():
    wrong = [(m, read) for m, (tree, _) in _sources().items() for m, read in foreign_private_reads(m, tree)]
    assert wrong == []


@pytest.mark.parametrize("path", sorted(TESTS.rglob("*.py")), ids=lambda p: p.relative_to(TESTS).as_posix())
def test_tests_use_public_api_or_the_internal_core(path):
    """Every test module, and the helpers of tests/support/."""
    tree = ast.parse(path.read_text(), str(path))
    assert foreign_private_reads(_module_name(path, TESTS, "tests"), tree, globals_too=False) == []


# ---- the native module's typed stub ----------------------------------------------------------------


def _stub() -> dict[str, set[str] | None]:
    """Names in arrowdev/_capsules.pyi: each function (None) and each class with its members."""
    tree = ast.parse((PACKAGE / "_capsules.pyi").read_text())
    out: dict[str, set[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = None
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {item.name if isinstance(item, ast.FunctionDef) else item.target.id
                              for item in node.body if isinstance(item, (ast.FunctionDef, ast.AnnAssign))}
    return out


def test_the_native_module_stub_names_what_the_module_has():
    from arrowdev import _capsules

    stub = _stub()
    assert set(stub) == {n for n in dir(_capsules) if not n.startswith("__")}
    for name, members in stub.items():
        if members is not None:
            native = {n for n in dir(getattr(_capsules, name)) if not n.startswith("__")}
            assert {n for n in members if not n.startswith("__")} == native, name


# ---- a UDF call goes down its layers --------------------------------------------------------------


def _module_of_file(filename: str) -> str | None:
    path = pathlib.Path(filename)
    try:
        return _module_name(path.resolve(), PACKAGE, "arrowdev")
    except ValueError:
        return None  # not arrowdev's


def calls_upward(run: Any) -> list[tuple[str, str]]:
    """(caller, callee) for every call ``run()`` makes from an arrowdev function into an arrowdev function of
    a higher layer (Python calls: the native core's are not seen)."""
    found: set[tuple[str, str]] = set()
    names: dict[str, str | None] = {}

    def module(code: Any) -> str | None:
        if code.co_filename not in names:
            names[code.co_filename] = _module_of_file(code.co_filename)
        return names[code.co_filename]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = module(frame.f_code), module(frame.f_back.f_code)
        if callee and caller and callee != caller and layer_of(callee) > layer_of(caller):
            found.add((caller, callee))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return sorted(found)


def test_the_call_tracer_sees_an_upward_call():
    import arrowdev.core.chunks as core_chunks

    col = arrowdev.column([1, 2, 3])
    # a lower layer calling up through a class it was handed: core.chunks.derive builds type(col)(...)
    assert ("arrowdev.core.chunks", "arrowdev.column") in calls_upward(lambda: core_chunks.derive(col, []))


@pytest.mark.parametrize("call", ["column", "table", "strings", "rolling"])
def test_a_udf_call_goes_down_its_layers_without_coming_back(call):
    pytest.importorskip("numba")
    import pyarrow as pa

    tbl = arrowdev.table({"a": pa.array([1.0, None, 3.0]), "b": pa.array([1.0, 2.0, 3.0]),
                          "s": pa.array(["x", None, "yz"])})
    runs = {"column": lambda: tbl["a"].apply(lambda x: x * 2 + 1),
            "table": lambda: tbl.apply(lambda a, b: a + b if a > 1 else b, columns=["a", "b"]),
            "strings": lambda: tbl["s"].apply(lambda s: s.upper() + "!"),
            "rolling": lambda: tbl["b"].rolling(2).result(lambda w: w.sum())}  # (apply: the column's constructor)
    runs[call]()  # compiled first: the traced call is the one a user repeats
    assert calls_upward(runs[call]) == []
