"""Running a Python script in a fresh interpreter, for tests of what happens once per process (numba's
memory manager, the first CUDA context, CUDA IPC between processes, NRT statistics)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_script(script: str, env: dict[str, str] | None = None, *args: str) -> str:
    """Runs a script in a fresh interpreter, with numba's default memory manager unless ``env`` names one."""
    inherited = {k: v for k, v in os.environ.items() if k != "NUMBA_CUDA_MEMORY_MANAGER"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                            timeout=300, env={**inherited, **(env or {})})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
