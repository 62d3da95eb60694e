"""A 1 GiB table handed to another process on the same GPU and read there: arrowdev's CUDA IPC with leases
(``export_ipc`` / ``import_ipc``) against ``torch.multiprocessing`` sending a CUDA tensor of the same bytes.

    python3 benchmarks/bench_ipc.py [--gib 1.0] [--runs 9] [--reader cupy|torch] [--json [PATH]]

One consumer process per library, started once (process start and CUDA initialisation are not counted),
takes each handoff and runs the first kernel over it (a sum of every value, checked), then drops it; arrowdev's
consumer sums with CuPy, or with ``--reader torch`` with PyTorch over the column (``torch.from_dlpack``), the
kernel torch's consumer runs, so that the two handoffs differ only in the handoff. Per
handoff, from the exporter's first call to the end of the consumer's kernel (``time.perf_counter`` is
CLOCK_MONOTONIC, one clock for both processes):

- arrowdev: ``export_ipc`` of a fresh view of the table (handles, lease registration), the bytes through a
  ``multiprocessing`` pipe, ``import_ipc`` (a lease taken over the exporter's socket, the allocation mapped),
  the kernel; then the drop (device synchronisation, unmapping, the lease released).
- torch: ``Queue.put`` of the tensor (its CUDA IPC handle, reference counter and event), ``Queue.get`` in the
  consumer (the tensor rebuilt over the mapped allocation), the kernel; then the drop.

The two libraries' handoffs alternate, pair by pair (the first of each pair alternating too), so both see the
machine as it is at that moment; medians over ``--runs`` pairs after a warm-up of each, and the ratio of each
pair's two handoffs (median, quartiles, how many pairs arrowdev won). Goal: arrowdev's handoff no slower than
torch's. The lease overhead per handoff is measured apart in the consumer: a lease and its release on the
connection kept idle since the last (what a handoff pays), on a connection another lease holds open, and with a
connection made for it (connect, greeting, lease, release, close: what a handoff paid before idle connections were
kept). torch's part is skipped, saying so, where torch is not installed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time

import record


def _first_kernel(reader: str):  # noqa: ANN202 - a function of a column
    """The view of a column by ``reader`` and the sum of its values on the host (a kernel over the memory,
    synchronous): a function of a column returning (the sum, the time its view was made)."""
    if reader == "torch":
        import torch

        view = torch.from_dlpack
    else:
        import cupy

        view = cupy.asarray

    def first_kernel(column):  # noqa: ANN001, ANN202
        values = view(column)
        viewed = time.perf_counter()
        return float(values.sum()), viewed
    return first_kernel


def _arrowdev_consumer(conn, reader: str) -> None:  # noqa: ANN001 - a multiprocessing Connection
    import arrowdev as ad

    first_kernel = _first_kernel(reader)
    while True:
        data = conn.recv_bytes()
        if not data:
            break
        got = time.perf_counter()
        table = ad.import_ipc(data)
        imported = time.perf_counter()
        total, viewed = first_kernel(table.column(0))
        kernel = time.perf_counter()
        del table
        dropped = time.perf_counter()
        conn.send((got, imported, viewed, kernel, dropped, total))
    conn.send(_lease_round_trips(conn.recv_bytes()))


def _lease_round_trips(data: bytes) -> tuple[float, float, float]:
    """:func:`_lease_pairs` on the export that ``data`` (``export_ipc`` bytes) names."""
    from arrowdev.cuda import ipc

    header, _ = ipc.parse_handle(data)
    target = header["leases"][0]
    return _lease_pairs(target["address"], target["export"], target["pid"])


def _lease_pairs(address: str, export: str, pid: int) -> tuple[float, float, float]:
    """Median microseconds of a lease and its release: while another lease holds the connection open; with no
    other lease held, the connection kept idle between pairs (what a handoff pays); and with a connection made
    and closed for each pair (``IDLE_KEPT = 0``: what a handoff paid before connections were kept)."""
    from arrowdev.cuda import lease_client

    def pair() -> None:
        lease_client.lease(address, export, pid).release()
    idle = _median_us(pair, 2000)
    kept = lease_client.IDLE_KEPT
    lease_client.IDLE_KEPT = 0
    try:
        pair()  # closes the idle connection
        cold = _median_us(pair, 200)
    finally:
        lease_client.IDLE_KEPT = kept
    held = lease_client.lease(address, export, pid)  # holds the connection open
    warm = _median_us(pair, 2000)
    held.release()
    return warm, idle, cold


def _lease_consumer(conn, address: str, export: str, pid: int) -> None:  # noqa: ANN001
    conn.send(_lease_pairs(address, export, pid))


def run_leases_only() -> tuple[float, float, float]:
    """The lease round trips alone, against an export of fake memory (no GPU needed)."""
    from arrowdev.cuda import lease_server

    export = lease_server.registry().add(["stands for the memory"], hold=3600.0)
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    consumer = ctx.Process(target=_lease_consumer, args=(theirs, lease_server.server().address, export.id, _pid()))
    consumer.start()
    result = mine.recv()
    consumer.join()
    return result


def _pid() -> int:
    import os

    return os.getpid()


def _median_us(call, repeats: int) -> float:  # noqa: ANN001
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        samples.append((time.perf_counter() - start) / repeats * 1e6)
    return statistics.median(samples)


def _torch_consumer(tensors, results) -> None:  # noqa: ANN001 - torch.multiprocessing queues
    import torch

    while True:
        tensor = tensors.get()
        got = time.perf_counter()
        if tensor is None:
            break
        total = float(tensor.sum())  # .item(): synchronises
        kernel = time.perf_counter()
        del tensor
        dropped = time.perf_counter()
        results.put((got, kernel, dropped, total))
    torch.cuda.synchronize()


class ArrowdevSide:
    """arrowdev's exporter here and its consumer process: :meth:`handoff` hands a fresh view of the table over."""

    def __init__(self, n: int, reader: str = "cupy") -> None:
        import numpy as np
        import pyarrow as pa

        import arrowdev as ad

        self.table = ad.table({"x": pa.array(np.arange(n, dtype=np.float64))}).to_device()
        self.want = float(n * (n - 1) // 2)
        ctx = multiprocessing.get_context("spawn")
        self.pipe, theirs = ctx.Pipe()
        self.consumer = ctx.Process(target=_arrowdev_consumer, args=(theirs, reader))
        self.consumer.start()

    def handoff(self) -> dict[str, float]:
        view = self.table.slice(0)  # a new object each time: a fresh export, not the cached bytes of the last
        start = time.perf_counter()
        data = view.export_ipc()
        exported = time.perf_counter()
        self.pipe.send_bytes(data)
        got, imported, viewed, kernel, dropped, total = self.pipe.recv()
        assert total == self.want, (total, self.want)
        del view
        return {"export_ms": (exported - start) * 1e3, "import_ms": (imported - got) * 1e3,
                "kernel_ms": (kernel - imported) * 1e3, "view_ms": (viewed - imported) * 1e3,
                "handoff_ms": (kernel - start) * 1e3,
                "drop_ms": (dropped - kernel) * 1e3}

    def close(self) -> tuple[float, float, float]:
        """Ends the consumer after its lease round trips (see :func:`_lease_pairs`)."""
        self.pipe.send_bytes(b"")
        self.pipe.send_bytes(self.table.export_ipc())
        leases = self.pipe.recv()
        self.consumer.join()
        return leases


class TorchSide:
    """torch.multiprocessing's sender here and its consumer process, handing a fresh view of one tensor over."""

    def __init__(self, n: int) -> None:
        import torch
        import torch.multiprocessing as tmp

        self.tensor = torch.arange(n, dtype=torch.float64, device="cuda")
        self.want = float(n * (n - 1) // 2)
        ctx = tmp.get_context("spawn")
        self.tensors, self.results = ctx.Queue(), ctx.Queue()
        self.consumer = ctx.Process(target=_torch_consumer, args=(self.tensors, self.results))
        self.consumer.start()

    def handoff(self) -> dict[str, float]:
        view = self.tensor[:]  # a new tensor each time, as arrowdev's view
        start = time.perf_counter()
        self.tensors.put(view)
        got, kernel, dropped, total = self.results.get()
        assert total == self.want, (total, self.want)
        del view
        return {"put_get_ms": (got - start) * 1e3, "kernel_ms": (kernel - got) * 1e3,
                "handoff_ms": (kernel - start) * 1e3, "drop_ms": (dropped - kernel) * 1e3}

    def close(self) -> None:
        self.tensors.put(None)
        self.consumer.join()


Rows = list[dict[str, float]]


def run(n: int, runs: int, reader: str = "cupy") -> tuple[Rows, Rows | None, tuple[float, float, float]]:
    """Handoffs of both libraries in turn, the first of each pair alternating (so neither always follows the
    other, and both see the machine as it is at that moment), after a warm-up of each: (arrowdev's rows, torch's
    rows or None without torch, the lease round trips)."""
    ours = ArrowdevSide(n, reader)
    try:
        theirs: TorchSide | None = TorchSide(n)
    except ImportError as e:
        print(f"torch is not installed ({e}): its part is skipped")
        theirs = None
    mine: Rows = []
    torch_rows: Rows = []
    sides = [(ours, mine)] + ([(theirs, torch_rows)] if theirs is not None else [])
    for side, _ in sides:  # warm-up
        side.handoff()
    for i in range(runs):
        for side, rows in (sides if i % 2 == 0 else sides[::-1]):
            rows.append(side.handoff())
    leases = ours.close()
    if theirs is not None:
        theirs.close()
    return mine, (torch_rows if theirs is not None else None), leases


def _medians(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="the table's size in GiB (float64 values)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--leases-only", action="store_true", help="only the lease round trips (no GPU needed)")
    parser.add_argument("--reader", choices=["cupy", "torch"], default="cupy",
                        help="what arrowdev's consumer sums the column with (torch: the same kernel as torch's side)")
    record.add_json_option(parser, "bench_ipc")
    args = parser.parse_args()
    if args.leases_only:
        warm_us, idle_us, cold_us = run_leases_only()
        print(f"lease + release: {warm_us:.1f} us on a connection another lease holds, {idle_us:.1f} us on the idle "
              f"connection kept since the last, {cold_us:.1f} us with the connection made and closed for it")
        return
    import cupy as cp

    n = int(args.gib * (1 << 30)) // 8
    machine = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{machine}: {n * 8 / (1 << 30):.2f} GiB ({n} float64 values), {args.runs} handoffs each, medians")
    ours, theirs, (warm_us, idle_us, cold_us) = run(n, args.runs, args.reader)
    mine = _medians(ours)
    print(f"arrowdev ({args.reader} reads): handoff {mine['handoff_ms']:.2f} ms = export {mine['export_ms']:.2f} "
          f"+ pipe and import "
          f"{mine['handoff_ms'] - mine['export_ms'] - mine['kernel_ms']:.2f} (import_ipc {mine['import_ms']:.2f}) "
          f"+ first kernel {mine['kernel_ms']:.2f} (the column's view {mine['view_ms']:.2f}); "
          f"drop {mine['drop_ms']:.2f} ms")
    print(f"lease overhead per handoff: {idle_us:.1f} us (lease + release on the idle connection kept), "
          f"{warm_us:.1f} us (connection held by another lease), {cold_us:.1f} us (a connection made for it)")
    rows = [{"library": "arrowdev", **mine, "lease_us_open": warm_us, "lease_us_idle": idle_us,
             "lease_us_connect": cold_us}]
    if theirs is not None:
        torch_m = _medians(theirs)
        print(f"torch:    handoff {torch_m['handoff_ms']:.2f} ms = put and get {torch_m['put_get_ms']:.2f} + first "
              f"kernel {torch_m['kernel_ms']:.2f}; drop {torch_m['drop_ms']:.2f} ms")
        ratio = mine["handoff_ms"] / torch_m["handoff_ms"]
        paired = sorted(a["handoff_ms"] / t["handoff_ms"] for a, t in zip(ours, theirs))
        quartiles = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
        print(f"arrowdev / torch handoff: {ratio:.2f} (goal <= 1: {'met' if ratio <= 1 else 'not met'}); "
              f"the handoffs pair by pair: median {statistics.median(paired):.2f}, quartiles {quartiles[0]:.2f}-"
              f"{quartiles[2]:.2f}, arrowdev faster in {sum(r <= 1 for r in paired)} of {len(paired)}")
        rows.append({"library": "torch", **torch_m, "paired_ratio_median": statistics.median(paired),
                     "paired_ratio_q1": quartiles[0], "paired_ratio_q3": quartiles[2],
                     "pairs_arrowdev_faster": sum(r <= 1 for r in paired), "pairs": len(paired)})
    record.write(args.json, "bench_ipc", machine, rows, gib=args.gib, runs=args.runs, reader=args.reader)


if __name__ == "__main__":
    sys.exit(main())
