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
