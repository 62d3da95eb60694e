"""Benchmark results as JSON files under benchmarks/results/, which benchmarks/plot_results.py draws.

Each file: ``{"benchmark", "machine", "command", "date", "source", "rows": [{...}, ...]}``. ``source`` is
``"measured"`` for a file a benchmark wrote with ``--json``; files seeded by hand from figures in docs/ say
which document they were transcribed from.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
from typing import Any

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def add_json_option(parser: argparse.ArgumentParser, name: str) -> None:
    """``--json [PATH]``: also write the results as JSON (default path: benchmarks/results/NAME.json)."""
    parser.add_argument("--json", nargs="?", const=str(RESULTS / f"{name}.json"), default=None, metavar="PATH",
                        help=f"write the results as JSON (default: benchmarks/results/{name}.json)")


def write(path: str | None, benchmark: str, machine: str, rows: list[dict[str, Any]], **extra: Any) -> None:
    """Writes the results to ``path`` (nothing when it is None)."""
    if path is None:
        return
    record = {"benchmark": benchmark, "machine": machine, "command": " ".join(["python3", *sys.argv]),
              "date": datetime.date.today().isoformat(), "source": "measured", **extra, "rows": rows}
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"results written to {out}")
