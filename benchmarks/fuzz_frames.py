"""The long run of arrowdev's frame fuzzer (tests/support/fuzz_frames.py), with its figures.

    python3 benchmarks/fuzz_frames.py --cases 1000000 [--start 0] [--workers 1] [--chunk 20000]

Each case is a seed: a sample column or table of tests/support/samples.py serialized through one of arrowdev's
wrappings (pickle protocol 5, the dask family, in row pieces, the cuda family's packed frame), its frames and header
mutated, each frame placed next to an unreadable page, received, and used when accepted. Cases run in batches in
child processes, so a crash or a hang is counted (with its seed) instead of ending the run. Prints: cases, crashes,
hangs, outcomes (refused, accepted, data-level refusals of full validation, clear errors after receipt) and every
failure (accepted but invalid, refused with another error, values changed). Rerun one case with
``python3 -m tests.support.fuzz_frames SEED``.
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
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--workers", type=int, default=2, help="child processes at a time")
    parser.add_argument("--chunk", type=int, default=20_000, help="seeds per round of children (progress lines)")
    args = parser.parse_args()
    started = time.perf_counter()
    figures = fuzz_run.Figures()
    for lo in range(args.start, args.start + args.cases, args.chunk):
        count = min(args.chunk, args.start + args.cases - lo)
        figures.merge(fuzz_run.run_parallel(lo, count, args.workers, module="support.fuzz_frames"))
        print(f"  seeds {lo}..{lo + count - 1} done, {time.perf_counter() - started:.0f} s: crashes "
              f"{len(figures.crashes)}, hangs {len(figures.hangs)}, failures {len(figures.failed)}", flush=True)
    seconds = time.perf_counter() - started
    print(f"cases            {figures.cases} (seeds {args.start}..{args.start + args.cases - 1}), {seconds:.0f} s, "
          f"{figures.cases / seconds:.0f} cases/s with {args.workers} workers")
    print(f"crashes          {len(figures.crashes)} {figures.crashes[:20]}")
    print(f"hangs            {len(figures.hangs)} {figures.hangs[:20]}")
    for outcome, count in figures.outcomes.most_common():
        print(f"  {outcome:<45} {count}")
    for kind, count in figures.error_kinds.most_common():
        seeds = [seed for seed, outcome in figures.errors if outcome.startswith(kind)][:5]
        print(f"    {kind:<60} {count} (seeds {seeds})")
    print(f"failures         {len(figures.failed)}")
    for seed, outcome in figures.failed[:40]:
        print(f"  seed {seed}: {outcome[:300]}")
    sys.exit(1 if figures.crashes or figures.hangs or figures.failed else 0)


if __name__ == "__main__":
    main()
