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


class Children:
    """Child interpreters with pipes, each running a script that answers commands read from stdin (the
    IPC and lease tests: importers that hold, release, die or exit on cue). A context manager: at its end,
    children still running are killed, and every pipe is closed."""

    def __init__(self, prelude: str = "") -> None:
        self.prelude, self.started = prelude, []

    def start(self, script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", self.prelude + textwrap.dedent(script), *args],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env)
        self.started.append(child)
        return child

    @staticmethod
    def ask(child: subprocess.Popen, command: str | None = None) -> str:
        """Sends ``command`` (if any) and returns the child's next line of output."""
        if command is not None:
            child.stdin.write(command + "\n")
            child.stdin.flush()
        line = child.stdout.readline()
        assert line, child.stderr.read()[-3000:]
        return line.strip()

    @staticmethod
    def finish(child: subprocess.Popen, command: str = "exit", timeout: float = 60) -> str:
        """Sends ``command`` and waits for the child to exit; its stderr."""
        child.stdin.write(command + "\n")
        child.stdin.flush()
        _, err = child.communicate(timeout=timeout)
        return err

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        for child in self.started:
            if child.poll() is None:
                child.kill()
            child.communicate()


def wait_for(condition, seconds: float = 2.0) -> float:
    """Waits until ``condition()`` is true (AssertionError after ``seconds``); how long it took."""
    import time

    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, f"not true within {seconds} s"
        time.sleep(0.005)
    return time.monotonic() - start


# The start of a script run in a fresh process whose threads must meet: ``at_once(n, call)`` runs ``call(k)`` for k in
# range(n), each in a thread of its own, all released together; the results by k (any exception fails the script).
AT_ONCE = """
import threading

def at_once(n, call):
    barrier, results, errors = threading.Barrier(n), {}, []
    def work(k):
        barrier.wait()
        try:
            results[k] = call(k)
        except Exception as e:
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results
"""
