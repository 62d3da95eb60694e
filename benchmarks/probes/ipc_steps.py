"""Where a CUDA IPC handoff's time goes (issue 35): cProfile of ``export_ipc`` in the exporter and of
``import_ipc``, the first kernel's conversion and the drop in a consumer process, over many handoffs of the same
table (as benchmarks/bench_ipc.py hands it over).

    python3 benchmarks/probes/ipc_steps.py [--gib 0.25] [--runs 40] [--top 30]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import pstats
import time


def _report(profile: cProfile.Profile, title: str, runs: int, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    print(f"== {title}: {runs} calls (times are totals over them)", file=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def _consumer(conn, runs: int, top: int) -> None:  # noqa: ANN001
    import cupy

    import arrowdev as ad

    profiles = {"import_ipc": cProfile.Profile(time.perf_counter), "first kernel": cProfile.Profile(time.perf_counter),
                "drop": cProfile.Profile(time.perf_counter)}
    wall = {k: 0.0 for k in profiles}
    for i in range(runs + 1):
        data = conn.recv_bytes()
        on = i > 0
        start = time.perf_counter()
        if on:
            profiles["import_ipc"].enable()
        table = ad.import_ipc(data)
        if on:
            profiles["import_ipc"].disable()
            profiles["first kernel"].enable()
        mid = time.perf_counter()
        total = float(cupy.asarray(table.column(0)).sum())
        if on:
            profiles["first kernel"].disable()
            profiles["drop"].enable()
        kernel = time.perf_counter()
        del table
        if on:
            profiles["drop"].disable()
            wall["import_ipc"] += mid - start
            wall["first kernel"] += kernel - mid
            wall["drop"] += time.perf_counter() - kernel
        conn.send(total)
    text = "".join(f"{k}: {v / runs * 1e3:.3f} ms a call (profiled)\n" for k, v in wall.items())
    conn.send(text + "".join(_report(p, k, runs, top) for k, p in profiles.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=0.25)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    import numpy as np
    import pyarrow as pa

    import arrowdev as ad

    n = int(args.gib * (1 << 30)) // 8
    table = ad.table({"x": pa.array(np.arange(n, dtype=np.float64))}).to_device()
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    consumer = ctx.Process(target=_consumer, args=(theirs, args.runs, args.top))
    consumer.start()
    profile = cProfile.Profile(time.perf_counter)
    wall = 0.0
    for i in range(args.runs + 1):
        view = table.slice(0)
        start = time.perf_counter()
        if i:
            profile.enable()
        data = view.export_ipc()
        if i:
            profile.disable()
            wall += time.perf_counter() - start
        mine.send_bytes(data)
        mine.recv()
        del view
    print(f"export_ipc: {wall / args.runs * 1e3:.3f} ms a call (profiled)")
    print(_report(profile, "export_ipc", args.runs, args.top))
    print(mine.recv())
    consumer.join()


if __name__ == "__main__":
    main()
