"""Running a fuzzer's cases in child processes, and its figures: the import fuzzer's
(tests/support/fuzz_arrow.py) and the frame fuzzer's (tests/support/fuzz_frames.py): ``module`` names the one
whose ``run_case(seed) -> (outcome, case)`` runs.

:func:`run_batch` runs many seeds in one child process, which prints a line before and after each
case, so a crash names its seed; the parent starts a new child after the crashed case. A case that runs
longer than ``ARROWDEV_FUZZ_CASE_SECONDS`` (default 30) ends its child (faulthandler) and is counted as a hang.
:func:`run_parallel` splits a range of seeds between a few such children at a time.
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

IMPORTS = "support.fuzz_arrow"  # the import fuzzer: the default module

@dataclass
class Figures:
    cases: int = 0
    crashes: list = field(default_factory=list)  # (seed, exit status)
    hangs: list = field(default_factory=list)  # seeds whose case ran past the time limit
    outcomes: Counter = field(default_factory=Counter)
    unbalanced: list = field(default_factory=list)
    wrong: list = field(default_factory=list)
    nodes: int = 0  # producer nodes whose releases were counted
    errors: list = field(default_factory=list)  # a few of the Python errors raised after an import
    error_kinds: Counter = field(default_factory=Counter)
    failed: list = field(default_factory=list)  # every outcome whose first word is in capitals (WRONG, INVALID, ...)

    def merge(self, other: Figures) -> None:
        self.cases += other.cases
        self.crashes += other.crashes
        self.hangs += other.hangs
        self.outcomes += other.outcomes
        self.unbalanced += other.unbalanced
        self.wrong += other.wrong
        self.nodes += other.nodes
        self.errors += other.errors
        self.error_kinds += other.error_kinds
        self.failed += other.failed

    def add(self, seed: int, outcome: str) -> None:
        self.cases += 1
        kind = outcome.split(":")[0].split(" (")[0]
        self.outcomes[kind] += 1
        if outcome.startswith("UNBALANCED"):
            self.unbalanced.append((seed, outcome))
        if outcome.startswith("WRONG"):
            self.wrong.append((seed, outcome))
        if kind.isupper():
            self.failed.append((seed, outcome))
        if outcome.startswith("error"):
            self.error_kinds[outcome.split(":")[0]] += 1
            if len(self.errors) < 200:
                self.errors.append((seed, outcome))


def _child_main(start: int, stop: int, module: str = IMPORTS) -> None:
    crash_seed = int(os.environ.get("ARROWDEV_FUZZ_CRASH_SEED", "-1"))  # tests of the harness itself
    hang_seed = int(os.environ.get("ARROWDEV_FUZZ_HANG_SEED", "-1"))
    case_seconds = float(os.environ.get("ARROWDEV_FUZZ_CASE_SECONDS", "30"))
    import faulthandler
    import importlib
    import resource
    import time

    run_case = importlib.import_module(module).run_case

    import arrowdev  # noqa: F401  (and all it imports: then frozen, so that each case's collection is quick)

    # a case that asks for more memory fails with MemoryError instead of taking the machine's
    limit = int(os.environ.get("ARROWDEV_FUZZ_MEMORY", str(4 << 30)))
    if os.environ.get("ARROWDEV_FUZZ_DEVICE"):
        # CUDA reserves tens of GB of address space for its context, which under the limit fails as "out of
        # memory": the context comes first, and the limit is that much above the space it took
        from arrowdev.gpu import runtime

        runtime.cupy().zeros(1)  # the driver, the device's context and CuPy's pool
        limit += os.sysconf("SC_PAGE_SIZE") * int(Path("/proc/self/statm").read_text().split()[0])
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

    gc.collect()
    gc.freeze()
    for seed in range(start, stop):
        print("START", seed, flush=True)
        if seed == crash_seed:
            ctypes.string_at(0)
        faulthandler.dump_traceback_later(case_seconds, exit=True)  # a hang ends the child: counted as one
        if seed == hang_seed:
            time.sleep(case_seconds + 5)
        outcome, case = run_case(seed)
        faulthandler.cancel_dump_traceback_later()
        nodes = getattr(case, "nodes", 0)
        del case
        gc.collect()  # the case's own nodes (cycles through their callbacks) go now, then what is left
        gc.freeze()   # (lazily imported modules, caches) is frozen: each case scans only its own objects
        print("DONE", seed, nodes, outcome.replace("\n", " "), flush=True)


def run_batch(start: int, count: int, figures: Figures, timeout: float | None = None, module: str = IMPORTS) -> None:
    """Runs seeds [start, start + count) in child processes; a crash or a hang is recorded with its seed
    and the seeds after it run in a new child. Each case has a time limit of its own (``_child_main``); ``timeout``, if
    given, bounds the whole batch (a batch of many cases on a busy machine takes its time: none by default)."""
    # the child imports support.fuzz_run (under tests/) and arrowdev (under the root)
    tests, root = Path(__file__).parents[1], Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tests), os.environ.get("PYTHONPATH", "")])}
    stop = start + count
    while start < stop:
        code = f"from support import fuzz_run; fuzz_run._child_main({start}, {stop}, {module!r})"
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout,
                                  cwd=root)
            stdout, status = done.stdout, done.returncode
        except subprocess.TimeoutExpired as e:
            stdout, status = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
        else:
            if status > 0 and "Timeout (" in done.stderr:  # faulthandler ended a case that ran too long
                status = "hang"
            elif status > 0:  # a Python exception escaped the harness: a bug of the fuzzer, not a crash
                raise RuntimeError(f"the fuzzer failed in its child: {done.stderr[-3000:]}")
        last = None
        for line in stdout.splitlines():
            tag, _, rest = line.partition(" ")
            seed_text, _, rest = rest.partition(" ")
            if tag == "START":
                last = int(seed_text)
            elif tag == "DONE":
                nodes, _, outcome = rest.partition(" ")
                figures.add(int(seed_text), outcome)
                figures.nodes += int(nodes)
                last = None
                start = int(seed_text) + 1
        if status == 0 and last is None:
            return
        if last is None:  # died between cases, or before the first: count it on the next seed
            last = start
        figures.cases += 1
        if status == "hang":
            figures.hangs.append(last)
        else:
            figures.crashes.append((last, status))
        start = last + 1


def run_parallel(start: int, count: int, workers: int = 2, module: str = IMPORTS) -> Figures:
    """run_batch over [start, start + count) split between `workers` child processes at a time."""
    from concurrent.futures import ThreadPoolExecutor

    bounds = [start + count * i // workers for i in range(workers + 1)]
    parts = [Figures() for _ in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(run_batch, lo, hi - lo, part, None, module)
                     for lo, hi, part in zip(bounds, bounds[1:], parts)]:
            done.result()
    total = Figures()
    for part in parts:
        total.merge(part)
    return total
