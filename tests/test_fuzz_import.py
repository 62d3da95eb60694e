"""The import fuzzer (tests/support/fuzz_arrow.py) in CI: a bounded number of malformed and valid Arrow C
structs, each case in a child process, none may crash, and every producer node must be released
exactly as its producer's rules say. ``python3 benchmarks/fuzz_import.py --cases 40000`` runs
the long version and prints its figures."""

from __future__ import annotations

import os

import pytest

from support import fuzz_arrow
from support import fuzz_run

# About 20 s on two busy cores; the seeds are fixed so a failure reproduces with
# `python3 -m tests.support.fuzz_arrow SEED` from the repository's root.
CI_CASES = int(os.environ.get("ARROWDEV_FUZZ_CASES", "6000"))


def test_fuzzed_structs_never_crash_and_every_node_is_released_once():
    figures = fuzz_run.run_parallel(0, CI_CASES, workers=2)
    assert figures.cases == CI_CASES
    assert figures.crashes == [], (f"crashed on seeds {figures.crashes}: "
                                   "rerun one with python3 -m tests.support.fuzz_arrow SEED")
    assert figures.unbalanced == []
    assert figures.wrong == []
    assert figures.outcomes["error at import"] == 0, [e for e in figures.errors if e[1].startswith("error at import")]
    # the cases cover both sides: refused inputs, and inputs taken and used
    assert figures.outcomes["refused"] > CI_CASES // 5 and figures.outcomes["accepted"] > CI_CASES // 10


def test_the_harness_counts_a_crash_and_goes_on(monkeypatch):
    monkeypatch.setenv("ARROWDEV_FUZZ_CRASH_SEED", "3")
    figures = fuzz_run.Figures()
    fuzz_run.run_batch(0, 6, figures)
    assert [seed for seed, _ in figures.crashes] == [3]
    assert figures.cases == 6  # the five others ran, in a second child


@pytest.mark.parametrize("seed", range(4))
def test_a_case_runs_in_process_and_balances(seed):
    outcome, case = fuzz_arrow.run_case(seed)
    assert not outcome.startswith(("UNBALANCED", "WRONG")), (case.log, outcome)
    assert case.nodes >= 2
