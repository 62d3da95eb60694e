"""Probe (GPU): a string UDF's peak memory and time at 10^8 rows with the output's sizing margins and a range's
working set set otherwise than the code's: ``string_sink._DATA_MARGIN`` and ``_COLUMN_MARGIN`` (the data's slack over
the rows the host has not seen, and over the whole column at the pipeline's start), ``execute.OUTPUT_SHARE`` (a
range's share of the output) and ``execute.WORKING_SET`` (its fixed part). Several settings run in one process over
one column, alternating round by round, each measured as ``bench_udf_memory.py`` measures a call (peak above what was
in use, median wall time). docs/strings.md ("The data's slack where the rows are unseen", "A range's working set")
compares settings this way.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/string_margins.py --settings 0.1:192 0.05:192 --rounds 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=float, help="string_sink._DATA_MARGIN (the code's when left out)")
    parser.add_argument("--column", type=float, help="string_sink._COLUMN_MARGIN")
    parser.add_argument("--settings", nargs="+", default=["0.1:192"],
                        help="SHARE:MIB pairs: execute.OUTPUT_SHARE and execute.WORKING_SET in MiB")
    parser.add_argument("--rows", default="1e8")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--udfs", nargs="+", default=["upper", "replace", "chain"])
    args = parser.parse_args()
    import arrowdev as ad
    import bench_udf_memory as bench
    from arrowdev.udf.run import execute, string_sink

    if args.data is not None:
        string_sink._DATA_MARGIN = args.data
    if args.column is not None:
        string_sink._COLUMN_MARGIN = args.column
    print(f"data margin {string_sink._DATA_MARGIN}, column margin {string_sink._COLUMN_MARGIN}")
    bench.route_cupy_through_arrowdev()
    col = ad.column(bench.make_strings(int(float(args.rows)))).to_device()
    print(f"{'round':>5s} {'share':>6s} {'MiB':>5s} {'udf':>8s} {'peak/out':>8s} {'peak GB':>8s} {'ms':>7s}")
    for r in range(args.rounds):
        for setting in args.settings:
            share, mib = setting.split(":")
            execute.OUTPUT_SHARE, execute.WORKING_SET = float(share), int(mib) << 20
            for name in args.udfs:
                mine = bench.arrowdev_peak(col, bench.UDFS[name], args.runs)
                print(f"{r:5d} {float(share):6.3f} {int(mib):5d} {name:>8s} {mine['peak'] / mine['output']:7.3f}x "
                      f"{mine['peak'] / 1e9:8.3f} {mine['ms']:7.2f}", flush=True)


if __name__ == "__main__":
    main()
