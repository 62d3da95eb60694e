"""The examples run as users run them (design.md: examples run in the tests)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_runs_and_balances():
    result = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "zero-copy slice: ['kiwi', None]" in out
    assert "'count': [5, 4, None, 3]" in out
    assert "held arrays left: 0 | exports not yet released: 0" in out


def test_ci_runs_the_readme_quick_start_commands_in_order():
    """`.ci/run` is the README's quick start as written: the install line, then the test line."""
    root = EXAMPLES.parent
    readme = (root / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    quick_start = [line for line in block.splitlines() if line.strip()]
    ci = (root / ".ci" / "run").read_text().splitlines()
    commands = [line for line in ci if line.startswith("python3 ")]
    assert len(quick_start) == 2 and quick_start[1].endswith("python3 -m pytest")
    assert commands == quick_start
