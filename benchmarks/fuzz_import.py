"""The long run of arrowdev's import fuzzer (tests/support/fuzz_arrow.py), with its figures.

    python3 benchmarks/fuzz_import.py --cases 40000 [--start 0] [--workers 2]

Each case is a seed: a random PyArrow array copied into hand-made structs with counted releases,
a few pointers, counts, formats, flags, metadata, device fields or stream callbacks broken, handed
to arrowdev through one of its protocols, and used when accepted. Cases run in batches in child
processes, so a crash is counted (with its seed) instead of ending the run. Prints: cases,
crashes, outcomes (refused at import, accepted, refused by validate(full=True), a Python error
after import), producer nodes whose releases were counted, and any node released other than
exactly as its producer's rules say. Rerun one case with ``python3 -m tests.support.fuzz_arrow SEED``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from support import fuzz_run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40000)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--workers", type=int, default=2, help="child processes at a time")
    args = parser.parse_args()
    started = time.perf_counter()
    figures = fuzz_run.run_parallel(args.start, args.cases, args.workers)
    seconds = time.perf_counter() - started
    print(f"cases            {figures.cases} (seeds {args.start}..{args.start + args.cases - 1}), {seconds:.0f} s, "
          f"{figures.cases / seconds:.0f} cases/s with {args.workers} workers")
    print(f"crashes          {len(figures.crashes)} {figures.crashes[:20]}")
    for outcome, count in figures.outcomes.most_common():
        print(f"  {outcome:<45} {count}")
    for kind, count in figures.error_kinds.most_common():
        seeds = [seed for seed, outcome in figures.errors if outcome.startswith(kind)][:5]
        print(f"    {kind:<60} {count} (seeds {seeds})")
    print(f"producer nodes   {figures.nodes} counted; released other than once-if-reachable: {len(figures.unbalanced)}")
    for seed, outcome in figures.unbalanced[:20]:
        print(f"  seed {seed}: {outcome}")
    print(f"wrong values     {len(figures.wrong)} {figures.wrong[:20]}")
    sys.exit(1 if figures.crashes or figures.unbalanced or figures.wrong else 0)


if __name__ == "__main__":
    main()
