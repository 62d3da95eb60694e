"""Probe (GPU): the string gather with each number of rows a warp takes (``string_gathers.GATHER_ROWS``: 32, the
design before, and more, which keep a warp's lanes busy over short rows), over bench_udf_memory.py's column
(10^8 rows by default; ``--pad N`` puts N bytes before each string, for longer rows): the gathers' GPU time in one
call (CUDA events around each, the first range's ``_gather`` and the pipelined ranges' ``gather_range``, summed;
median of ``--runs`` calls) and the call's wall time (synchronised), with the values checked on samples across the
column.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/gather_rows.py [--rows 1e8] [--udfs upper replace] [--pad 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_udf_memory import UDFS, make_strings  # noqa: E402

PYTHON = {"upper": str.upper, "replace": lambda s: s.replace("1", "<>"), "concat": lambda s: s + "!",
          "chain": lambda s: s.upper().replace("AB", "<>") + "!"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--udfs", nargs="+", default=["upper", "replace"])
    parser.add_argument("--warp-rows", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pad", type=int, default=0, help="bytes put before each string")
    args = parser.parse_args()
    import cupy as cp
    import numpy as np
    import pyarrow.compute as pc

    import arrowdev as ad
    from arrowdev.udf.run import string_gathers, string_sink

    n = int(args.rows)
    source = make_strings(n)
    if args.pad:
        source = pc.binary_join_element_wise("x" * args.pad, source, "")
    column = ad.column(source).to_device()
    spans: list = []

    def timed(gather):  # noqa: ANN001, ANN202
        def timed_gather(mem, *rest, **kw):  # noqa: ANN001, ANN002, ANN003
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(mem.stream)
            gather(mem, *rest, **kw)
            end.record(mem.stream)
            spans.append((start, end))
        return timed_gather
    string_gathers._gather = string_sink._gather = timed(string_gathers._gather)
    string_gathers.gather_range = timed(string_gathers.gather_range)
    samples = np.random.default_rng(3).integers(0, n - 50, 10).tolist()
    for name in args.udfs:
        f = UDFS[name]
        for rows in args.warp_rows:
            string_gathers.GATHER_ROWS = rows
            for _ in range(2):
                column.apply(f)
            gathers, walls = [], []
            for _ in range(args.runs):
                spans.clear()
                start = time.perf_counter()
                out = column.apply(f)
                cp.cuda.Device().synchronize()
                walls.append((time.perf_counter() - start) * 1e3)
                gathers.append(sum(cp.cuda.get_elapsed_time(a, b) for a, b in spans))
            right = all(out[s:s + 50].to_pylist() == [PYTHON[name](v) for v in source.slice(s, 50).to_pylist()]
                        for s in samples)
            print(f"{name}: {rows} rows a warp: gathers {statistics.median(gathers):.2f} ms in all ({len(spans)} "
                  f"launches), call {statistics.median(walls):.1f} ms; values {'right' if right else 'WRONG'}")


if __name__ == "__main__":
    main()
