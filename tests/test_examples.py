"""The examples run as users run them, and CI runs the README's quick start as written."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_runs_and_balances():
    result = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "zero-copy slice: ['kiwi', None]" in out
    assert "'count': [5, 4, None, 3]" in out
    assert "held arrays left: 0 | exports not yet released: 0" in out


def _readme_quick_start() -> list[str]:
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_quick_start_commands_in_order():
    """`.ci/run` runs the README's quick start as written: the install line, then the test line (CI may
    install more between them, never after the test line)."""
    quick_start = _readme_quick_start()
    ci = [line for line in (EXAMPLES.parent / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert len(quick_start) == 2 and quick_start[1].endswith("-m pytest")
    assert quick_start[0] == ci[0] and quick_start[1] == ci[-1]


def test_readme_quick_start_makes_and_uses_a_virtual_environment():
    """Debian's and Ubuntu's python3 refuse `pip install` outside a virtual environment (PEP 668): the
    first line makes one and every later command runs its Python."""
    first, second = _readme_quick_start()
    steps = [step.strip() for line in (first, second) for step in line.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert all(step.startswith(".venv/bin/python ") for step in steps[1:]), steps


@pytest.mark.gpu
def test_gpu_worker_processes_share_and_hand_over_tables_by_name():
    """examples/ipc_workers.py: a lookup table every worker reads, batches taken one by one, a worker killed
    holding one; the example checks the results and the producer's accounting itself."""
    try:  # within pytest's own limit, so that a hang shows what the example printed
        result = subprocess.run([sys.executable, str(EXAMPLES / "ipc_workers.py")], capture_output=True, text=True,
                                timeout=240)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"examples/ipc_workers.py ran past 240 s; it printed {hung.stdout!r} and {hung.stderr!r}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "leases held by others now: 0; exports lent: 0; bytes lent: 0" in result.stdout
    assert "device bytes in use at the end: 0" in result.stdout


_CORE_ONLY = """
import sys
ALLOWED = {"pyarrow", "nanoarrow", "numpy", "arrowdev"}  # what `pip install -e .` installs, and arrowdev
class _CoreOnly:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in ALLOWED and top not in sys.stdlib_module_names and not top.startswith("_"):
            raise ModuleNotFoundError(f"No module named {name!r} (not in the core install)", name=name)
        return None
sys.meta_path.insert(0, _CoreOnly())
"""


def test_the_readme_s_first_example_runs_after_the_first_install_line_alone():
    """The quick start's first line installs only arrowdev's core (PyArrow, nanoarrow, NumPy): the README's
    first example runs with nothing else importable (Polars there is optional)."""
    import importlib.util

    import test_docs

    readme = (EXAMPLES.parent / "README.md").read_text()
    first = next(source for block_id, source in test_docs.BLOCKS if block_id.startswith("README.md"))
    assert first.strip() in readme and "import polars" in first  # the block that shows Polars, made optional
    program = _CORE_ONLY + test_docs._stated_values(first) + "\nprint('polars' in sys.modules)\n"
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("False")  # it ran without Polars
    assert importlib.util.find_spec("polars") is not None  # (and here, with the test extra, with it: test_docs.py)
