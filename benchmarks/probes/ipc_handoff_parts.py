"""Where a CUDA IPC handoff's time goes, without a profiler's overhead (issue 35): the steps of ``export_ipc``
and ``import_ipc`` wrapped in timers (medians over the handoffs, microseconds), and the first kernel split into
its parts, in the exporter and a consumer process, as benchmarks/bench_ipc.py hands a table over.

    python3 benchmarks/probes/ipc_handoff_parts.py [--gib 1.0] [--runs 40] [--reader cupy|torch] [--profile DIR]

``--reader torch``: the first kernel is PyTorch's sum over ``torch.from_dlpack(column)`` (bench_ipc's
``--reader torch``), split into the DLPack export, torch's view and the sum; PyTorch's steps are timed again after
it, and over the consumer's own memory.

``--profile DIR``: instead of the timers, cProfile around every ``export_ipc`` (the exporter) and every
``import_ipc`` and drop (the consumer), the functions by their own time written to DIR/ipc_profile_export.txt and
DIR/ipc_profile_import.txt, and around the first kernel's view of the column, DIR/ipc_profile_view.txt.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import os
import pstats
import functools
import multiprocessing
import statistics
import time

EXPORT_STEPS = [("arrowdev.table", "ArrowTable.to_struct_array"), ("arrowdev.cuda.ipc", "_chunked.wait_for_producers"),
                ("arrowdev.cuda.ipc", "_chunked.exportable_chunks"), ("arrowdev.cuda.ipc", "_shareable"),
                ("arrowdev.cuda.ipc", "_Exporter.__init__"), ("arrowdev.cuda.ipc", "_Exporter.node"),
                ("arrowdev.cuda.ipc", "calls.pinned"), ("arrowdev.cuda.ipc", "lease_server.registry"),
                ("arrowdev.cuda.ipc", "lease_server.server"), ("arrowdev.cuda.leases", "Registry.add"),
                ("arrowdev.cuda.ipc", "calls.device_uuid"), ("arrowdev.cuda.ipc", "json.dumps"),
                ("arrowdev.cuda.ipc", "calls.check_device")]
IMPORT_STEPS = [("arrowdev.cuda.ipc", "parse_handle"), ("arrowdev.cuda.ipc", "ipc_checks.check_before_mapping"),
                ("arrowdev.cuda.ipc", "calls.device_with_uuid"), ("arrowdev.cuda.ipc", "_Imported.take_leases"),
                ("arrowdev.cuda.ipc", "calls.open_handle"), ("arrowdev.cuda.ipc", "lease_client.start_lease"),
                ("arrowdev.cuda.ipc", "ipc_checks.check_mapped_sizes"), ("arrowdev.cuda.ipc", "calls.allocation"),
                ("arrowdev.cuda.ipc", "calls.value_checks"), ("arrowdev.cuda.ipc", "ipc_checks.check_after_mapping"),
                ("arrowdev.cuda.ipc", "_build"), ("arrowdev.cuda.ipc", "_chunked.make"),
                ("arrowdev.cuda.ipc", "_Imported.release"), ("arrowdev.cuda.ipc", "calls.synchronize")]


def _wrap(steps, spent) -> None:  # noqa: ANN001
    import importlib

    for module_name, path in steps:
        owner = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, __original=original, __key=path, **kwargs):  # noqa: ANN002, ANN003, ANN202
            start = time.perf_counter()
            try:
                return __original(*args, **kwargs)
            finally:
                spent[__key] += time.perf_counter() - start
        setattr(owner, name, timed)


def _medians(rows: list[dict[str, float]]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return "".join(f"  {k:38s} {statistics.median(r.get(k, 0.0) for r in rows) * 1e6:8.1f}\n" for k in keys)


class _Interface:
    def __init__(self, cai: dict) -> None:  # noqa: ANN001
        self.__cuda_array_interface__ = cai


def _after_the_first_kernel(cupy, column, own) -> dict[str, float]:  # noqa: ANN001
    """The first kernel's parts again, apart: the column's CAI alone, CuPy's view through it again, through
    arrowdev's to_cupy(), through a CAI without a stream; a second sum over the imported memory and one over the
    consumer's own memory."""
    spent = {}
    for name, call in [("again: column CAI", lambda: column.__cuda_array_interface__),
                       ("again: cupy.asarray(column)", lambda: cupy.asarray(column)),
                       ("again: column.to_cupy()", lambda: column.to_cupy()),
                       ("again: cupy.asarray(CAI, no stream)",
                        lambda: cupy.asarray(_Interface({**column.__cuda_array_interface__, "stream": None}))),
                       ("again: sum (float) imported", lambda: float(cupy.asarray(column).sum())),
                       ("again: sum launched, own memory", lambda: own.sum()),
                       ("again: sum (float), own memory", lambda: float(own.sum()))]:
        cupy.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        call()
        spent[name] = time.perf_counter() - start
    return spent


def _torch_after(torch, column, own) -> dict[str, float]:  # noqa: ANN001
    """PyTorch's parts of a first kernel again, apart: arrowdev's DLPack export alone (on the stream torch names),
    torch's view, the sum over the imported memory and over the consumer's own memory."""
    stream = torch.cuda.current_stream().cuda_stream or 1
    mine = torch.from_dlpack(own)
    spent = {}
    for name, call in [("again: column.__dlpack__(stream)", lambda: column.__dlpack__(stream=stream)),
                       ("again: torch.from_dlpack(column)", lambda: torch.from_dlpack(column)),
                       ("again: torch sum (float) imported", lambda: float(torch.from_dlpack(column).sum())),
                       ("again: torch sum (float), own memory", lambda: float(mine.sum()))]:
        torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        spent[name] = time.perf_counter() - start
    return spent


def _first_kernel(reader: str, cupy, column, profile=None) -> tuple[float, dict[str, float]]:  # noqa: ANN001
    """The first kernel over an imported column, by ``reader``: its sum and its parts' times (the view made
    inside ``profile`` where one is given)."""
    t0 = time.perf_counter()
    with _profiled(profile):
        if reader == "torch":
            import torch

            view = torch.from_dlpack(column)
        else:
            view = cupy.asarray(column)
    t1 = time.perf_counter()
    launched = view.sum()
    t2 = time.perf_counter()
    total = float(launched)
    t3 = time.perf_counter()
    return total, {f"{reader} view of the column": t1 - t0, "sum launched": t2 - t1, "sum finished (float)": t3 - t2}


def _profiled(profile: cProfile.Profile | None) -> contextlib.AbstractContextManager:
    return profile if profile is not None else contextlib.nullcontext()


def _write_profile(profile: cProfile.Profile | None, directory: str | None, side: str) -> None:
    if profile is None or directory is None:
        return
    with open(os.path.join(directory, f"ipc_profile_{side}.txt"), "w") as fh:
        pstats.Stats(profile, stream=fh).sort_stats("tottime").print_stats(45)
        pstats.Stats(profile, stream=fh).sort_stats("cumtime").print_stats(45)


def _consumer(conn, profile_dir, reader) -> None:  # noqa: ANN001
    import cupy

    import arrowdev as ad

    spent: collections.defaultdict[str, float] = collections.defaultdict(float)
    profile = cProfile.Profile() if profile_dir else None
    views = cProfile.Profile() if profile_dir else None
    if profile is None:
        _wrap(IMPORT_STEPS, spent)
    rows = []
    own = cupy.zeros(1 << 27)  # 1 GiB of the consumer's own memory, for the same sum
    while True:
        data = conn.recv_bytes()
        if not data:
            break
        spent.clear()
        t0 = time.perf_counter()
        with _profiled(profile):
            table = ad.import_ipc(data)
        t1 = time.perf_counter()
        column = table.column(0)
        t2 = time.perf_counter()
        total, first = _first_kernel(reader, cupy, column, views)
        after = _after_the_first_kernel(cupy, column, own)
        if reader == "torch":
            import torch

            after.update(_torch_after(torch, column, own))
        t5 = time.perf_counter()
        with _profiled(profile):
            del table, column
        t6 = time.perf_counter()
        rows.append({"import_ipc": t1 - t0, **spent, "table.column(0)": t2 - t1, **first, "drop": t6 - t5, **after})
        conn.send(total)
    _write_profile(profile, profile_dir, "import")
    _write_profile(views, profile_dir, "view")
    conn.send(_medians(rows[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--reader", choices=("cupy", "torch"), default="cupy")
    parser.add_argument("--profile", default=None, metavar="DIR", help="cProfile instead of the timers, into DIR")
    args = parser.parse_args()
    import numpy as np
    import pyarrow as pa

    import arrowdev as ad

    n = int(args.gib * (1 << 30)) // 8
    table = ad.table({"x": pa.array(np.arange(n, dtype=np.float64))}).to_device()
    spent: collections.defaultdict[str, float] = collections.defaultdict(float)
    profile = cProfile.Profile() if args.profile else None
    if profile is None:
        _wrap(EXPORT_STEPS, spent)
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    consumer = ctx.Process(target=_consumer, args=(theirs, args.profile, args.reader))
    consumer.start()
    rows = []
    for _ in range(args.runs + 1):
        view = table.slice(0)
        spent.clear()
        start = time.perf_counter()
        with _profiled(profile):
            data = view.export_ipc()
        rows.append({"export_ipc": time.perf_counter() - start, **spent})
        mine.send_bytes(data)
        mine.recv()
        del view
    mine.send_bytes(b"")
    print(f"exporter (us, medians of {args.runs}; nested steps count in their callers too):")
    print(_medians(rows[1:]))
    print("consumer:")
    print(mine.recv())
    consumer.join()
    _write_profile(profile, args.profile, "export")


if __name__ == "__main__":
    main()
