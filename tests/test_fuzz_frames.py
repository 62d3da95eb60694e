"""The frame fuzzer (tests/support/fuzz_frames.py) in CI: a few thousand mutated serializations of every sample
type through every wrapping, fresh seeds each day (from the date), each case in a child process, every frame next
to an unreadable page. None may crash, hang, be refused with anything but InvalidArrowError, or be accepted and
then refused by full validation; an unmutated case must come back equal. ``python3 benchmarks/fuzz_frames.py``
runs the long version and prints its figures; ``python3 -m tests.support.fuzz_frames SEED`` reruns one case."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import pytest

from support import fuzz_frames, fuzz_run

# About 15 s of two busy cores (with the child processes' start-up)
CI_CASES = int(os.environ.get("ARROWDEV_FUZZ_FRAMES_CASES", "3000"))
MODULE = "support.fuzz_frames"


def todays_first_seed() -> int:
    """Seeds of their own each day (ARROWDEV_FUZZ_FRAMES_START to repeat a day's): 10^6 per day since 2026-01-01."""
    start = os.environ.get("ARROWDEV_FUZZ_FRAMES_START")
    if start is not None:
        return int(start)
    return (datetime.date.today() - datetime.date(2026, 1, 1)).days * 1_000_000


def test_fuzzed_frames_never_crash_hang_or_pass_invalid():
    start = todays_first_seed()
    figures = fuzz_run.run_parallel(start, CI_CASES, workers=2, module=MODULE)
    rerun = f"(seeds {start}..{start + CI_CASES - 1}; rerun one with python3 -m tests.support.fuzz_frames SEED)"
    assert figures.cases == CI_CASES
    assert figures.crashes == [], f"crashed: {figures.crashes} {rerun}"
    assert figures.hangs == [], f"hung: {figures.hangs} {rerun}"
    assert figures.failed == [], f"{figures.failed[:10]} {rerun}"
    # the cases cover both sides: refused receipts, and receipts accepted and used
    assert figures.outcomes["refused"] > CI_CASES // 3 and figures.outcomes["accepted"] > CI_CASES // 5


def test_an_over_read_of_a_guarded_frame_is_a_crash():
    """The guard page works: a read one byte past a placed frame kills the process (so the fuzzer counts an
    over-read as a crash), a read up to its end does not."""
    code = """
import ctypes, numpy as np, sys
from support.guarded import Arena
frame = Arena().place(bytes(range(16)))
address = np.frombuffer(frame, np.uint8).ctypes.data
print(ctypes.string_at(address, 16) == bytes(range(16)), flush=True)
ctypes.string_at(address, 17)
print("read past the end", flush=True)
"""
    tests = os.path.dirname(__file__)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tests, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])})
    assert done.stdout.splitlines() == ["True"] and done.returncode < 0, (done.stdout, done.stderr[-500:])


def test_the_harness_counts_a_hang_and_goes_on(monkeypatch):
    monkeypatch.setenv("ARROWDEV_FUZZ_HANG_SEED", "2")
    monkeypatch.setenv("ARROWDEV_FUZZ_CASE_SECONDS", "6")  # a case takes milliseconds, on a busy machine seconds
    figures = fuzz_run.Figures()
    fuzz_run.run_batch(0, 4, figures, module=MODULE)
    assert figures.hangs == [2] and figures.crashes == []
    assert figures.cases == 4  # the one after it ran, in a second child


@pytest.mark.parametrize("seed", range(6))
def test_a_case_runs_in_process(seed):
    outcome, case = fuzz_frames.run_case(seed)
    assert not outcome.split(":")[0].split(" (")[0].isupper(), (case.log, outcome)


@pytest.mark.gpu
def test_gpu_fuzzed_device_frames_never_crash_hang_or_pass_invalid(monkeypatch):
    """The cuda family's device frames (a frame per buffer, or packed), mutated and put back on the GPU: their
    values are checked there (CuPy) before anything reads them. Each case in a child process, as on the CPU."""
    monkeypatch.setenv("ARROWDEV_FUZZ_DEVICE", "1")
    cases = int(os.environ.get("ARROWDEV_FUZZ_DEVICE_CASES", "600"))
    start = todays_first_seed()
    figures = fuzz_run.run_parallel(start, cases, workers=2, module=MODULE)
    rerun = f"(seeds {start}..{start + cases - 1}; ARROWDEV_FUZZ_DEVICE=1 python3 -m tests.support.fuzz_frames SEED)"
    assert figures.crashes == [] and figures.hangs == [], f"{figures.crashes} {figures.hangs} {rerun}"
    assert figures.failed == [], f"{figures.failed[:10]} {rerun}"
    assert figures.outcomes["refused"] > cases // 4 and figures.outcomes["accepted"] > cases // 6
