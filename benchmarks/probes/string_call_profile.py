"""Probe (GPU): where the host's time goes in one string UDF call over many ranges of rows (bench_udf_memory.py's
column, 10^8 rows by default): the call's wall time (median, a device sync after each), then cProfile around
``--calls`` calls, the functions by their own time and by cumulative time, written to
``$OUT/string_call_profile_<udf>.txt`` (or the current folder), and the time the host spent waiting for the GPU
(CuPy's synchronising calls) against the rest: the host work a range costs.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/string_call_profile.py [--rows 1e8] [--udfs upper]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_udf_memory import UDFS, make_strings  # noqa: E402

_WAITS = ("synchronize", "'get' of", "memcpy", "deviceSynchronize", "streamSynchronize", "eventSynchronize")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--udfs", nargs="+", default=["upper", "replace"])
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    import cupy as cp

    import arrowdev as ad

    column = ad.column(make_strings(int(args.rows))).to_device()
    out_dir = os.environ.get("OUT", ".")
    for name in args.udfs:
        f = UDFS[name]
        for _ in range(2):
            column.apply(f)
        cp.cuda.Device().synchronize()
        walls = []
        for _ in range(5):
            start = time.perf_counter()
            out = column.apply(f)
            cp.cuda.Device().synchronize()
            walls.append((time.perf_counter() - start) * 1e3)
            del out
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            out = column.apply(f)
            del out
        cp.cuda.Device().synchronize()
        profile.disable()
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        total = stats.total_tt / args.calls * 1e3
        waits = sum(tt for (_, _, fn), (_, _, tt, _, _) in stats.stats.items() if any(w in fn for w in _WAITS))
        stats.sort_stats("tottime").print_stats(40)
        stats.sort_stats("cumulative").print_stats(60)
        path = Path(out_dir) / f"string_call_profile_{name}.txt"
        path.write_text(text.getvalue())
        print(f"{name}: call {statistics.median(walls):.1f} ms (median of 5, wall, synchronised); under cProfile "
              f"{total:.1f} ms a call, of which waiting for the GPU {waits / args.calls * 1e3:.1f} ms; profile in {path}")


if __name__ == "__main__":
    main()
