"""Probe (GPU): what a string UDF's first call over a long column holds at its peak, against docs/udf.md's bound
(1.25 x the output + 256 MiB). The first call knows nothing of the kernel's rows (its ranges are sized by
guesses, its first range runs alone to measure them); later calls size everything from the last one. Per call:
the peak above what was in use before (``ad.cuda.memory_stats``, CuPy's allocations counted), the output, and
the bytes in use sampled at each pipelined range with what the pipeline held then (its arena, the output's
mapped data, the offsets).

    bash .gpu-wheels/run.sh python3 benchmarks/probes/first_call_peak.py [--rows 1e8] [--calls 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import arrowdev as ad  # noqa: E402
from bench_udf_memory import route_cupy_through_arrowdev  # noqa: E402

CHAIN = lambda s: s.upper().replace("AB", "<>") + "!"  # noqa: E731


def main() -> None:
    import cupy

    from arrowdev.udf.run import string_sink

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args()
    rows = int(args.rows)
    numbers = pa.array(np.random.default_rng(1).integers(0, 10**12, rows))
    col = ad.column(pc.binary_join_element_wise("ab1", pc.cast(numbers, pa.string()), "")).to_device()
    del numbers
    route_cupy_through_arrowdev()
    col[:1000].apply(CHAIN)  # compiles; too few rows to learn from (string_results.LEARN_ROWS)
    samples: list[tuple[int, int, int, int]] = []
    original = string_sink.Pipeline.step

    def step(self, k, start, b, launch, pairs):
        original(self, k, start, b, launch, pairs)
        arena = self.arena.capacity if self.arena is not None else 0
        samples.append((k, ad.cuda.memory_stats()["bytes_in_use"], arena, self.grows.mapped))

    string_sink.Pipeline.step = step
    for call in range(args.calls):
        samples.clear()
        cupy.cuda.Device().synchronize()
        before = ad.cuda.memory_stats()["bytes_in_use"]
        ad.cuda.reset_peak()
        out = col.apply(CHAIN)
        cupy.cuda.Device().synchronize()
        peak = ad.cuda.memory_stats()["peak_bytes"] - before
        bound = 1.25 * out.nbytes + (256 << 20)
        print(f"call {call}: output {out.nbytes / 1e9:.3f} GB, peak {peak / 1e9:.3f} GB ({peak / out.nbytes:.2f}x), "
              f"bound {bound / 1e9:.3f} GB: {'within' if peak <= bound else 'PAST'}; {len(samples)} pipelined ranges")
        for k, in_use, arena, mapped in samples[:3] + samples[-2:]:
            print(f"    range {k:3d}: in use {(in_use - before) / 1e9:.3f} GB, arena {arena / 1e9:.3f} GB, "
                  f"data mapped {mapped / 1e9:.3f} GB")
        del out


if __name__ == "__main__":
    main()
