"""Host->device and device->host throughput of a 1 GiB table: arrowdev against the plain copy of
the same bytes from/to pinned memory (the ceiling), and against CuPy (``cupy.asarray`` of each
buffer, ``cupy.asnumpy`` back), all in one process on the same data.

    python3 benchmarks/bench_transfer.py [--gib 1.0] [--runs 7]

Timings are wall-clock medians after a warm-up, each ending with the copy's stream synchronised
(arrowdev's H2D includes staging pageable memory through pinned buffers; that is the cost a user
pays). The pinned baseline is also timed with CUDA events, printed for reference.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import pyarrow as pa

import arrowdev as ad
import record


def make_table(gib: float) -> pa.Table:
    rows = int(gib * (1 << 30) / 4 / 8)  # three 8-byte columns and one string column of ~ the same size
    rng = np.random.default_rng(0)
    strings = pa.array(np.char.add("s", rng.integers(0, 10**6, rows // 4 + 1).astype(str)).astype(object))
    repeated = pa.concat_arrays([strings] * 4).slice(0, rows)
    return pa.table({"a": np.arange(rows, dtype=np.int64), "b": rng.random(rows),
                     "c": rng.integers(0, 1 << 40, rows), "s": repeated.cast(pa.large_string())})


def table_bytes(t: pa.Table) -> int:
    return sum(b.size for col in t.columns for chunk in col.chunks for b in chunk.buffers() if b is not None)


def median_seconds(fn, runs: int, sync) -> float:
    fn()
    sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - start)
        del out
    return statistics.median(times)


def interleaved_seconds(ways: dict, rounds: int, sync, dropped: tuple = ()) -> dict:
    """Seconds of each way (a function: its result is dropped once timed) per round, the ways taking turns
    round after round, so a change in the host's load slows them alike; each ends with ``sync()``. The first
    round warms every way up and is not counted. A way that raises one of ``dropped`` is reported and left out."""
    samples: dict = {k: [] for k in ways}
    for round_ in range(rounds + 1):
        for name, fn in list(ways.items()):
            sync()
            t0 = time.perf_counter()
            try:
                out = fn()
            except dropped as e:
                print(f"{name}: {e}", flush=True)
                del ways[name], samples[name]
                continue
            sync()
            if round_:
                samples[name].append(time.perf_counter() - t0)
            del out
    return samples


def print_against_ceiling(samples: dict, ceiling: Any, nbytes: int) -> None:
    """Each way's median time, GB/s and fraction of the ``ceiling`` way's (and of its fastest round)."""
    top = statistics.median(samples[ceiling])
    for name, times in samples.items():
        s = statistics.median(times)
        print(f"{str(name):44s} {s * 1e3:7.1f} ms {nbytes / s / 1e9:6.1f} GB/s  of ceiling {top / s:.2f} "
              f"(fastest {top / min(times):.2f})", flush=True)


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=7)
    record.add_json_option(parser, "bench_transfer")
    args = parser.parse_args()
    table = make_table(args.gib)
    nbytes = table_bytes(table)
    src = ad.table(table)
    sync = cp.cuda.runtime.deviceSynchronize
    print(f"table: {table.num_rows:,} rows, {table.num_columns} columns, {nbytes / 2**30:.2f} GiB of buffers")
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")

    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    device = cp.cuda.alloc(nbytes)
    stream = cp.cuda.Stream(non_blocking=True)

    def pinned_h2d():
        cp.cuda.runtime.memcpyAsync(device.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice, stream.ptr)

    def pinned_d2h():
        cp.cuda.runtime.memcpyAsync(pinned.ptr, device.ptr, nbytes, cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)

    def event_seconds(fn) -> float:
        fn()
        stream.synchronize()
        samples = []
        for _ in range(args.runs):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            fn()
            end.record(stream)
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        return statistics.median(samples)

    views = [np.frombuffer(b, dtype=np.uint8) for col in table.columns for chunk in col.chunks
             for b in chunk.buffers() if b is not None]
    on_device = src.to_device()
    sync()
    device_views = [cp.asarray(v) for v in views]

    results = {
        "h2d pinned memcpy (ceiling)": median_seconds(pinned_h2d, args.runs, sync),
        "h2d arrowdev to_device": median_seconds(lambda: src.to_device(), args.runs, sync),
        "h2d cupy.asarray per buffer": median_seconds(lambda: [cp.asarray(v) for v in views], args.runs, sync),
        "d2h pinned memcpy (ceiling)": median_seconds(pinned_d2h, args.runs, sync),
        "d2h arrowdev to_host": median_seconds(lambda: on_device.to_host(), args.runs, sync),
        "d2h cupy.asnumpy per buffer": median_seconds(lambda: [cp.asnumpy(v) for v in device_views], args.runs, sync),
    }
    events = {"h2d": event_seconds(pinned_h2d), "d2h": event_seconds(pinned_d2h)}
    assert on_device.to_host().to_pyarrow().equals(table)

    for name, seconds in results.items():
        print(f"{name:32s} {seconds * 1e3:9.1f} ms  {nbytes / seconds / 1e9:7.1f} GB/s")
    for way in ("h2d", "d2h"):
        ceiling = results[f"{way} pinned memcpy (ceiling)"]
        mine = results[f"{way} arrowdev to_{'device' if way == 'h2d' else 'host'}"]
        peer = results[f"{way} cupy.{'asarray' if way == 'h2d' else 'asnumpy'} per buffer"]
        print(f"{way}: arrowdev / pinned ceiling = {ceiling / mine:.2f} (goal >= 0.80); "
              f"arrowdev vs cupy speed-up = {peer / mine:.2f}x; "
              f"pinned memcpy by CUDA events {nbytes / events[way] / 1e9:.1f} GB/s")
    machine = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    record.write(args.json, "bench_transfer", machine, [
        {"direction": name.split()[0], "method": name.split(" ", 1)[1], "ms": seconds * 1e3,
         "gb_per_s": nbytes / seconds / 1e9} for name, seconds in results.items()], bytes=nbytes)


if __name__ == "__main__":
    main()
