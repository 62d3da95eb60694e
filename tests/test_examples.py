"""The examples run as users run them, and CI runs the README's quick start as written."""

from __future__ import annotations

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
    result = subprocess.run([sys.executable, str(EXAMPLES / "ipc_workers.py")], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "leases held by others now: 0; exports lent: 0; bytes lent: 0" in result.stdout
    assert "device bytes in use at the end: 0" in result.stdout
