"""Every ```python block of README.md and docs/ runs, as a user would run it: each in a fresh process, in a
fresh directory.

A block whose first line is a comment starting with ``# GPU`` needs a CUDA GPU: it runs in the GPU suite
(the ``gpu`` marker). A top-level expression followed by a comment that is a Python literal states its
value (``col.to_pylist()  # [3, None, 7]``): the block asserts it. Docs also cite files of the repository:
every cited path exists, and no document cites a design document outside it.
"""

from __future__ import annotations

import ast
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
GPU_FIRST_LINE = "# GPU"


def _blocks() -> list[tuple[str, str]]:
    """(id, source) of every ```python block: id is path:line of its first line."""
    found = []
    for path in DOCUMENTS:
        lines = path.read_text().splitlines()
        start = None
        for number, line in enumerate(lines, 1):
            if start is None and line.strip() == "```python":
                start = number
            elif start is not None and line.strip() == "```":
                found.append((f"{path.relative_to(ROOT)}:{start + 1}", "\n".join(lines[start:number - 1]) + "\n"))
                start = None
    return found


BLOCKS = _blocks()


def _stated_values(source: str) -> str:
    """The block with each `expression  # literal` line turned into an assertion of that value."""
    comments = {tok.start[0]: tok.string[1:].strip() for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    tree = ast.parse(source)
    for i, node in enumerate(tree.body):
        comment = comments.get(node.end_lineno) if isinstance(node, ast.Expr) else None
        expected = _literal(comment) if comment else None
        if expected is not None:
            shown = ast.get_source_segment(source, node)
            check = f"assert ({shown}) == {expected[0]!r}, ({shown!r}, 'is', {shown})"
            tree.body[i] = ast.parse(check).body[0]
    return ast.unparse(tree)


def _literal(comment: str) -> tuple[object] | None:
    """(value,) when the comment is a Python literal, or starts with one followed by ': ' and prose."""
    candidates = [comment] + [comment[:i] for i in range(len(comment)) if comment.startswith(": ", i)]
    for candidate in candidates:
        try:
            return (ast.literal_eval(candidate.strip()),)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return None


def _params() -> list[object]:
    return [pytest.param(source, id=block_id,
                         marks=[pytest.mark.gpu] if source.lstrip().startswith(GPU_FIRST_LINE) else [])
            for block_id, source in BLOCKS]


# What a GPU block's first line may name that a GPU machine can lack (the suite's own extras it has), and the module
_OPTIONAL_ON_A_GPU = {"dask-cuda": "dask_cuda", "PyTorch": "torch"}


@pytest.mark.parametrize("source", _params())
def test_code_block_runs(source, tmp_path):
    first = source.lstrip().splitlines()[0]
    if first.startswith(GPU_FIRST_LINE):
        for name, module in _OPTIONAL_ON_A_GPU.items():
            if name in first:
                pytest.importorskip(module, reason=f"the block needs {name}")
    program = _stated_values(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-W", "error", "-c", program], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def test_there_are_blocks_of_both_kinds():
    gpu = [block_id for block_id, source in BLOCKS if source.lstrip().startswith(GPU_FIRST_LINE)]
    assert len(BLOCKS) >= 8 and 0 < len(gpu) < len(BLOCKS)


def test_stated_values_are_checked():
    program = _stated_values("x = [1, 2]\nx  # [1, 2]\nlen(x)  # 3: prose after the value\nx  # a list, not a literal\n"
                             "{'a': 1}  # {'a': 1}\n")
    assert "assert x == [1, 2]" in program and "assert len(x) == 3" in program
    assert "assert {'a': 1} == {'a': 1}" in program and program.count("assert") == 3
    with pytest.raises(AssertionError):
        exec(compile(program, "<block>", "exec"), {})


CITED = re.compile(r"(?<![\w/.-])((?:arrowdev|capsules|tests|docs|benchmarks|examples)/[\w/.-]*\w)")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_cite_only_files_of_the_repository(path):
    text = path.read_text()
    assert "design.md" not in text
    missing = {cited for cited in CITED.findall(text) if not (ROOT / cited.split("::")[0]).exists()}
    links = re.findall(r"\]\(([^)#\s]+)\)", text)
    missing |= {link for link in links if "://" not in link and not (path.parent / link).exists()}
    assert not missing


def test_no_code_cites_a_design_document_outside_the_repository():
    sources = [p for d in ("arrowdev", "capsules", "tests", "benchmarks", "examples") for p in (ROOT / d).rglob("*")
               if p.suffix in (".py", ".c", ".h", ".pyi") and p.name != "test_docs.py"]
    assert not [str(p.relative_to(ROOT)) for p in sources if "design.md" in p.read_text()]


def test_the_api_reference_builds_without_warnings(tmp_path):
    """docs/api (Sphinx autodoc + napoleon over the numpydoc docstrings), warnings as errors."""
    pytest.importorskip("sphinx", reason="the API reference needs the docs extra: pip install -e '.[docs]'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                             str(ROOT / "docs" / "api"), str(tmp_path)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    page = (tmp_path / "columns.html").read_text()
    assert "ArrowColumn.to_device" in page and "ArrowColumn.apply" in page


def test_figures_are_drawn_from_the_recorded_results(tmp_path):
    """benchmarks/plot_results.py draws every figure from benchmarks/results/*.json; each result file names
    its machine and says whether it was measured or transcribed; the committed PNGs are there."""
    pytest.importorskip("matplotlib", reason="the figures need the docs extra: pip install -e '.[docs]'")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import plot_results
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    figures = []
    save = plot_results._save
    plot_results._save = lambda fig, out, record, **how: (figures.append(fig), save(fig, out, record, **how))[1]
    try:
        written = plot_results.main(["--out", str(tmp_path)])
    finally:
        plot_results._save = save
    recorded = [image for name, (image, _) in plot_results.PLOTS.items()
                if (ROOT / "benchmarks" / "results" / f"{name}.json").exists()]
    assert {"string_udfs.png", "transfers.png", "udf_bandwidth.png"} <= set(recorded)
    assert sorted(p.name for p in written) == sorted(recorded)
    for png in written:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (ROOT / "docs" / "images" / png.name).exists()
        for drawn in (png, ROOT / "docs" / "images" / png.name):  # the committed one was drawn by this script too
            assert b"Drawn by: python3 benchmarks/plot_results.py, from benchmarks/results/" in drawn.read_bytes()
    for fig in figures:  # a legend covers no bar or line, and no label is an internal name
        fig.canvas.draw()
        for ax in fig.axes:
            found = ax.get_legend() or fig.legends[0]  # the axes' own, or one the figure holds for all of them
            legend = found.get_window_extent()
            marks = [p.get_window_extent() for p in ax.patches] + [line.get_window_extent() for line in ax.lines]
            assert not [m for m in marks if m.width and m.height and legend.overlaps(m)]
            labels = [t.get_text() for t in ax.get_yticklabels()] + [t.get_text() for t in found.get_texts()]
            assert not [label for label in labels if "issue" in label.lower()]
        assert any("Drawn by: python3 benchmarks/plot_results.py" in t.get_text() for t in fig.texts)
    for result in (ROOT / "benchmarks" / "results").glob("*.json"):
        record = json.loads(result.read_text())
        assert record["machine"] and (record["source"] == "measured" or "transcribed from docs/" in record["source"])


def test_the_ownership_diagram_is_drawn_by_its_script(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="the diagram needs the docs extra: pip install -e '.[docs]'")
    sys.path.insert(0, str(ROOT / "docs" / "images"))
    try:
        import draw_ownership
    finally:
        sys.path.remove(str(ROOT / "docs" / "images"))
    monkeypatch.setattr(draw_ownership, "OUT", tmp_path / "ownership.png")
    assert draw_ownership.main().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for drawn in (tmp_path / "ownership.png", ROOT / "docs" / "images" / "ownership.png"):
        assert b"Drawn by: python3 docs/images/draw_ownership.py" in drawn.read_bytes()


def test_benchmarks_record_their_results_as_json(tmp_path):
    """The --json option of the benchmarks (benchmarks/record.py): a file plot_results.py can read."""
    import argparse

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import record
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    parser = argparse.ArgumentParser()
    record.add_json_option(parser, "bench_udf")
    assert parser.parse_args([]).json is None
    assert parser.parse_args(["--json"]).json == str(ROOT / "benchmarks" / "results" / "bench_udf.json")
    out = tmp_path / "r.json"
    record.write(str(out), "bench_udf", "a GPU", [{"rows": 10, "gb_per_s": 1.5}], pandas_rows=7)
    written = json.loads(out.read_text())
    assert written["source"] == "measured" and written["machine"] == "a GPU" and written["pandas_rows"] == 7
    assert written["rows"] == [{"rows": 10, "gb_per_s": 1.5}]
    for bench in ("bench_udf", "bench_string_udf", "bench_transfer"):
        assert f'record.add_json_option(parser, "{bench}")' in (ROOT / "benchmarks" / f"{bench}.py").read_text()


def test_the_scale_figure_draws_a_bench_scale_record(tmp_path):
    """plot_results.plot_scale over the rows bench_scale.py --json writes (here a record of its shape; the figure in
    docs/ is drawn from benchmarks/results/bench_scale.json once the GPU run is recorded)."""
    pytest.importorskip("matplotlib", reason="the figures need the docs extra: pip install -e '.[docs]'")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import plot_results
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = [{"engine": engine, "mode": mode, "gpus": gpus, "rows_per_s": 1e8 * gpus * speed}
            for engine, speed in (("arrowdev", 1.0), ("dask-cudf", 0.5)) for mode in ("strong", "weak", "load")
            for gpus in (1, 2, 4)]
    record = {"machine": "4 x test GPU", "source": "measured", "date": "2026-01-01", "dataset_rows": 10**8, "rows": rows}
    out = plot_results.plot_scale(record, tmp_path / "scale.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
