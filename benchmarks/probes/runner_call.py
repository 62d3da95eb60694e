"""Microseconds of one call of a prepared PyArrow runner (``HostUDF.runner``, what DuckDB's function calls per
vector) on 2048 float64 rows, outside DuckDB: median and best of 15 rounds of 20,000 calls.

    python3 benchmarks/probes/runner_call.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pyarrow as pa

from arrowdev.integrations.batches import HostUDF


def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def main() -> None:
    udf = HostUDF(piecewise, host="probe")
    x = pa.array(np.random.default_rng(0).random(2048))
    pa.array(udf([x], ["x"], ["double"]))
    for _ in range(2):  # the first learns the PyArrow types, the second prepares the layout and its runner
        udf.pyarrow_call([x])
    run = udf.runner
    assert run is not None and run([x], False) is not None
    rounds = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(20000):
            run([x], False)
        rounds.append((time.perf_counter() - t0) / 20000 * 1e6)
    print(f"runner call on 2048 rows: {statistics.median(rounds):.2f} us (best {min(rounds):.2f})")


if __name__ == "__main__":
    main()
