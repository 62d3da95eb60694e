"""Where a streamed UDF call's time goes (docs/udf.md, "Data larger than the GPU"): the loop of
``arrowdev.streaming.apply_on_gpu`` with each step timed on the host, over bench_streaming.py's table.

    python3 benchmarks/probes/streaming_phases.py [--times-gpu 1.5]

Per range: the host time of the copies in (``to_device`` of each column: the staging threads copy pageable memory
into pinned buffers while the DMA engine drains them), of queueing the kernel (``run``), of queueing the result's
copy back (``to_host``, with its pinned buffer), and the whole; then the same for the link alone (``to_device`` of
a range of one column, then of both as a table).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402

import arrowdev as ad  # noqa: E402
import bench_streaming as bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times-gpu", type=float, default=1.5)
    args = parser.parse_args()
    import cupy

    from arrowdev import streaming
    from arrowdev.core import chunks

    props = cupy.cuda.runtime.getDeviceProperties(0)
    rows = int(args.times_gpu * int(props["totalGlobalMem"]) / 16)
    a, b = bench.make_column(rows, 0.0), bench.make_column(rows, 0.31)
    tbl = ad.table({"a": pa.array(a), "b": pa.array(b)})
    columns = [tbl.column("a"), tbl.column("b")]
    f = lambda x, y: x > y  # noqa: E731
    step = streaming.range_rows(rows, 16.0, streaming._room(0))
    print(f"{rows} rows, ranges of {step} rows ({step * 16 / 1e9:.2f} GB of input)")
    columns[0][:1024].to_device().apply(lambda x: x > 0.5)  # compile outside
    ad.table({"a": columns[0][:1024], "b": columns[1][:1024]}).to_device().apply(f)
    copy_in, copy_out = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    phases: dict[str, list[float]] = {"copy in": [], "run": [], "to_host": []}
    t_start = time.perf_counter()
    clock = time.perf_counter
    arriving = [c[0:step].to_device(0, stream=copy_in) for c in columns]
    results = []
    for start in range(0, rows, step):
        here = arriving
        t0 = clock()
        computed = ad.table({"a": here[0], "b": here[1]}).apply(f)
        t1 = clock()
        if start + step < rows:
            arriving = [c[start + step:start + 2 * step].to_device(0, stream=copy_in) for c in columns]
        t2 = clock()
        results.append(computed.to_host(stream=copy_out))
        t3 = clock()
        phases["run"].append(t1 - t0)
        phases["copy in"].append(t2 - t1)
        phases["to_host"].append(t3 - t2)
        del here, computed
    cupy.cuda.Device().synchronize()
    total = clock() - t_start
    chunks.chunks(results[0])
    print(f"whole: {total:.2f} s, {2 * rows * 8 / total / 1e9:.1f} GB/s of input, {len(results)} ranges")
    for name, values in phases.items():
        print(f"  {name:8s}: sum {sum(values):.3f} s, median {statistics.median(values) * 1e3:.1f} ms, "
              f"max {max(values) * 1e3:.1f} ms")
    one = columns[0][0:step]
    for label, make in (("one column's range", lambda: one.to_device(0)),
                        ("both columns' range, one after the other", lambda: [c[0:step].to_device(0) for c in columns]),
                        ("both as one table", lambda: ad.table({"a": columns[0][0:step], "b": columns[1][0:step]})
                         .to_device(0))):
        times = []
        for _ in range(3):
            t0 = clock()
            got = make()
            cupy.cuda.Device().synchronize()
            times.append(clock() - t0)
            del got
        nbytes = step * 8 * (1 if label.startswith("one") else 2)
        print(f"link, {label}: {nbytes / statistics.median(times) / 1e9:.1f} GB/s ({[round(t, 3) for t in times]})")


if __name__ == "__main__":
    main()
