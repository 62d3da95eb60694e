"""Probe (GPU): would a string UDF call over many ranges gain from running one range's kernel while the range
before it is gathered (two streams)? Stood in for by two calls over the two halves of the column, each on its
own stream from its own thread, against the same two calls one after the other and the whole column in one
call (bench_udf_memory.py's column, 10^8 rows). Wall time with a device sync, medians of ``--runs``.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/range_overlap.py [--rows 1e8] [--udfs upper replace]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_udf_memory import UDFS, make_strings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--udfs", nargs="+", default=["upper", "replace", "concat"])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import cupy as cp

    import arrowdev as ad

    n = int(args.rows)
    column = ad.column(make_strings(n)).to_device()
    halves = [column.slice(0, n // 2), column.slice(n // 2)]
    streams = [cp.cuda.Stream(non_blocking=True) for _ in halves]

    def whole(f) -> None:  # noqa: ANN001
        column.apply(f)

    def in_turn(f) -> None:  # noqa: ANN001
        for half, stream in zip(halves, streams):
            half.apply(f, stream=stream)

    def side_by_side(f) -> None:  # noqa: ANN001
        threads = [threading.Thread(target=half.apply, args=(f,), kwargs={"stream": stream})
                   for half, stream in zip(halves, streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for name in args.udfs:
        f = UDFS[name]
        row = []
        for way in (whole, in_turn, side_by_side):
            for _ in range(2):
                way(f)
            cp.cuda.Device().synchronize()
            walls = []
            for _ in range(args.runs):
                start = time.perf_counter()
                way(f)
                cp.cuda.Device().synchronize()
                walls.append((time.perf_counter() - start) * 1e3)
            row.append(statistics.median(walls))
        print(f"{name}: whole column {row[0]:.1f} ms, two halves one after the other {row[1]:.1f} ms, "
              f"two halves side by side (two streams, two threads) {row[2]:.1f} ms")


if __name__ == "__main__":
    main()
