"""Per-call cost of taking Arrow data in and handing it on to PyArrow: arrowdev vs nanoarrow vs
PyArrow's own C Data round trip.

    python3 benchmarks/bench_exchange.py [--repeats N] [--target-ms MS]

Each case runs one statement per library that imports the data and hands it to PyArrow; every
statement is checked once (same values, same buffer addresses as the source: zero-copy) before it
is timed. The three statements of a case are timed in turn within each repeat, so drift in the
machine hits them alike. Reported: the median over repeats of microseconds per call, and the
ratios arrowdev/nanoarrow and arrowdev/PyArrow (below 1 means arrowdev is faster).
``timeit`` switches the garbage collector off while timing, as usual.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import timeit
from typing import Any, Callable

import nanoarrow as na
import nanoarrow.device as nad
import numpy as np
import pyarrow as pa

import arrowdev as ad

ROWS = 1000
COLUMNS = 16


def _addresses(obj: Any) -> list[int]:
    """Buffer addresses of a PyArrow Array / RecordBatch / Table (all chunks, all columns)."""
    if isinstance(obj, pa.Table):
        return [a for col in obj.columns for chunk in col.chunks for a in _addresses(chunk)]
    if isinstance(obj, pa.RecordBatch):
        return [a for col in obj.columns for a in _addresses(col)]
    return [b.address for b in obj.buffers() if b is not None]


def _cases() -> list[tuple[str, Any, dict[str, tuple[str, Callable[[], Any]]]]]:
    a = pa.array(np.arange(ROWS, dtype=np.int64))
    batch = pa.record_batch({f"c{i}": pa.array(np.arange(ROWS, dtype=np.int64) + i) for i in range(COLUMNS)})
    dev = pa.Array._import_from_c_device_capsule
    dev_rb = pa.RecordBatch._import_from_c_device_capsule
    return [
        (f"int64[{ROWS}], array", a, {
            "arrowdev": ("pa.array(ad.column(a))", lambda: pa.array(ad.column(a))),
            "nanoarrow": ("pa.array(na.c_array(a))", lambda: pa.array(na.c_array(a))),
            "pyarrow": ("pa.Array._import_from_c_capsule(*a.__arrow_c_array__())",
                        lambda: pa.Array._import_from_c_capsule(*a.__arrow_c_array__())),
        }),
        (f"int64[{ROWS}], device capsules", a, {
            "arrowdev": ("dev(*ad.column(a).__arrow_c_device_array__())",
                         lambda: dev(*ad.column(a).__arrow_c_device_array__())),
            "nanoarrow": ("dev(*nanoarrow.device.c_device_array(a).__arrow_c_device_array__())",
                          lambda: dev(*nad.c_device_array(a).__arrow_c_device_array__())),
            "pyarrow": ("dev(*a.__arrow_c_device_array__())", lambda: dev(*a.__arrow_c_device_array__())),
        }),
        (f"batch {COLUMNS}x int64[{ROWS}], array", batch, {
            "arrowdev": ("pa.record_batch(ad.table(b))", lambda: pa.record_batch(ad.table(batch))),
            "nanoarrow": ("pa.record_batch(na.c_array(b))", lambda: pa.record_batch(na.c_array(batch))),
            "pyarrow": ("pa.RecordBatch._import_from_c_capsule(*b.__arrow_c_array__())",
                        lambda: pa.RecordBatch._import_from_c_capsule(*batch.__arrow_c_array__())),
        }),
        (f"batch {COLUMNS}x int64[{ROWS}], stream", batch, {
            "arrowdev": ("pa.table(ad.table(b))", lambda: pa.table(ad.table(batch))),
            "nanoarrow": ("pa.table(na.Array(b))", lambda: pa.table(na.Array(batch))),
            "pyarrow": ("pa.RecordBatchReader._import_from_c_capsule(b.__arrow_c_stream__()).read_all()",
                        lambda: pa.RecordBatchReader._import_from_c_capsule(batch.__arrow_c_stream__()).read_all()),
        }),
        (f"batch {COLUMNS}x int64[{ROWS}], device capsules", batch, {
            "arrowdev": ("dev_rb(*ad.table(b).__arrow_c_device_array__())",
                         lambda: dev_rb(*ad.table(batch).__arrow_c_device_array__())),
            "nanoarrow": ("dev_rb(*nanoarrow.device.c_device_array(b).__arrow_c_device_array__())",
                          lambda: dev_rb(*nad.c_device_array(batch).__arrow_c_device_array__())),
            "pyarrow": ("dev_rb(*b.__arrow_c_device_array__())", lambda: dev_rb(*batch.__arrow_c_device_array__())),
        }),
    ]


def _arrowdev_parts() -> dict[str, tuple[str, Callable[[], Any]]]:
    """arrowdev's round trip split in two, to show where its time goes."""
    a = pa.array(np.arange(ROWS, dtype=np.int64))
    batch = pa.record_batch({f"c{i}": pa.array(np.arange(ROWS, dtype=np.int64)) for i in range(COLUMNS)})
    col, tbl = ad.column(a), ad.table(batch)
    return {
        "column import": ("ad.column(a)", lambda: ad.column(a)),
        "column export + PyArrow import": ("pa.array(col)", lambda: pa.array(col)),
        "table import": ("ad.table(b)", lambda: ad.table(batch)),
        "table export + PyArrow import": ("pa.record_batch(tbl)", lambda: pa.record_batch(tbl)),
    }


def _check(source: Any, fn: Callable[[], Any]) -> None:
    out = fn()
    if isinstance(out, pa.Table):
        assert out.equals(pa.Table.from_batches([source])), "values differ"
    else:
        assert out.equals(source), "values differ"
    assert _addresses(out) == _addresses(source), "not zero-copy: buffer addresses differ"


def _number_for(fn: Callable[[], Any], target_s: float) -> int:
    """Calls per repeat so that one repeat takes about target_s."""
    timer = timeit.Timer(fn)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target_s / 4 or number >= 1 << 20:
            return max(1, int(number * target_s / max(elapsed, 1e-9)))
        number *= 4


def _time(contenders: dict[str, Callable[[], Any]], repeats: int, target_s: float) -> dict[str, float]:
    """Median microseconds per call of each contender, timed in turn within every repeat."""
    timers = {name: (timeit.Timer(fn), _number_for(fn, target_s)) for name, fn in contenders.items()}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, (timer, number) in timers.items():
            samples[name].append(timer.timeit(number) / number * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=51, help="repeats per statement (default 51)")
    parser.add_argument("--target-ms", type=float, default=5.0, help="time per repeat in ms (default 5)")
    args = parser.parse_args()
    target_s = args.target_ms / 1000

    print(f"Python {platform.python_version()}, pyarrow {pa.__version__}, nanoarrow {na.__version__}, "
          f"numpy {np.__version__}, arrowdev {ad.__version__}; {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"median of {args.repeats} repeats of ~{args.target_ms:g} ms each; microseconds per call\n")

    header = f"{'case':36s} {'arrowdev':>10s} {'nanoarrow':>10s} {'pyarrow':>10s} {'ad/na':>7s} {'ad/pa':>7s}"
    print(header)
    print("-" * len(header))
    statements = []
    for title, source, contenders in _cases():
        for _, fn in contenders.values():
            _check(source, fn)
        us = _time({name: fn for name, (_, fn) in contenders.items()}, args.repeats, target_s)
        print(f"{title:36s} {us['arrowdev']:10.2f} {us['nanoarrow']:10.2f} {us['pyarrow']:10.2f} "
              f"{us['arrowdev'] / us['nanoarrow']:7.2f} {us['arrowdev'] / us['pyarrow']:7.2f}")
        statements.append((title, {name: stmt for name, (stmt, _) in contenders.items()}))

    print("\narrowdev's round trip in parts:")
    parts = _arrowdev_parts()
    us = _time({name: fn for name, (_, fn) in parts.items()}, args.repeats, target_s)
    for name, (stmt, _) in parts.items():
        print(f"  {name:32s} {us[name]:10.2f}   {stmt}")

    print("\nstatements (a = int64 array, b = record batch, dev = pa.Array._import_from_c_device_capsule, "
          "dev_rb = pa.RecordBatch._import_from_c_device_capsule):")
    for title, stmts in statements:
        print(f"  {title}")
        for name, stmt in stmts.items():
            print(f"    {name:10s} {stmt}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
