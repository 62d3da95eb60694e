"""Probe (GPU): a string UDF's peak memory and time at 10^8 rows with the output's sizing margins set otherwise than
the code's: ``string_sink._DATA_MARGIN`` and ``_COLUMN_MARGIN`` (the data's slack over the rows the host has not
seen, and over the whole column at the pipeline's start) and ``execute.OUTPUT_SHARE`` (a range's share of the
output), then ``bench_udf_memory.py``'s run as usual. docs/strings.md ("The data's slack where the rows are unseen")
compares margins this way.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/string_margins.py --data 1.03 --column 1.03 --share 0.1
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
    parser.add_argument("--share", type=float, help="execute.OUTPUT_SHARE")
    parser.add_argument("--rows", default="1e8")
    parser.add_argument("--udfs", nargs="+", default=["upper", "replace", "chain"])
    args = parser.parse_args()
    from arrowdev.udf.run import execute, string_sink

    if args.data is not None:
        string_sink._DATA_MARGIN = args.data
    if args.column is not None:
        string_sink._COLUMN_MARGIN = args.column
    if args.share is not None:
        execute.OUTPUT_SHARE = args.share
    print(f"data margin {string_sink._DATA_MARGIN}, column margin {string_sink._COLUMN_MARGIN}, output share "
          f"{execute.OUTPUT_SHARE}")
    import bench_udf_memory

    sys.argv = ["bench_udf_memory.py", "--rows", args.rows, "--runs", "3", "--no-peer", "--udfs", *args.udfs]
    bench_udf_memory.main()


if __name__ == "__main__":
    main()
