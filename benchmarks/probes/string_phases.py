"""Probe (GPU, not a benchmark against a peer): where the time of a new-string UDF goes. For each UDF of
bench_string_udf: the CUDA-event median of the whole ``apply``, then the same apply with a device sync at
each phase boundary (launch with its arena, string output assembly, validity, array build), host wall time
per phase. Run it under ``ncu --print-summary per-kernel`` for the kernels' own durations.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/string_phases.py [--rows N] [--runs R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arrowdev as ad  # noqa: E402
from bench_string_udf import NEW_STRINGS, READ_ONLY, gpu_median, make_strings  # noqa: E402


def phase_timers(cp):
    """Wraps the phases of a string UDF's run with a device sync and a wall-clock timer each."""
    from arrowdev.udf.run import execute, output, string_results

    spent: dict[str, list[float]] = {}

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            cp.cuda.runtime.deviceSynchronize()
            start = time.perf_counter()
            result = original(*args, **kwargs)
            cp.cuda.runtime.deviceSynchronize()
            spent.setdefault(label, []).append(time.perf_counter() - start)
            return result

        setattr(owner, name, wrapper)
        return lambda: setattr(owner, name, original)

    undo = [timed(execute, "_launch", "launch (+arena reads)"),
            timed(string_results, "build_string_output", "string output"),
            timed(execute, "merge_validity", "validity"),
            timed(output.ChunkOutput, "finish", "finish")]
    return spent, undo


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--phases", action="store_true", help="also time each phase with syncs between")
    parser.add_argument("--only", nargs="+", help="these UDFs only (by name: upper, concat, ...)")
    args = parser.parse_args()
    host = make_strings(args.rows)
    gcol = ad.column(host).to_device()
    stream = ad.cuda.runtime.stream_for(0)
    print(f"{len(host):,} strings on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    for name, udf, _ in NEW_STRINGS + READ_ONLY:
        if args.only and not any(word in name for word in args.only):
            continue
        gcol.apply(udf)
        cp.cuda.runtime.deviceSynchronize()
        whole = gpu_median(cp, stream, lambda: gcol.apply(udf), args.runs)
        line = f"{name:22s} whole {whole * 1e3:7.2f} ms"
        if args.phases:
            spent, undo = phase_timers(cp)
            for _ in range(3):
                gcol.apply(udf)
            for restore in undo:
                restore()
            line += "  " + "  ".join(f"{label} {statistics.median(v) * 1e3:.2f}" for label, v in spent.items())
        print(line, flush=True)


if __name__ == "__main__":
    main()
