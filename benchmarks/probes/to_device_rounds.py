"""Probe (GPU machine): ``to_device()`` of bench_transfer's table round after round, each copy dropped before
the next (as a benchmark loop or a batch job does), with where the round's time went: allocating the staging
ring's pinned slots, the whole host-to-device staging, the blocks on the device, and the free blocks left in
CuPy's pinned pool. The round-by-round view that showed each copy holding a staging ring (docs/device.md,
"Staging rings held across copies").

    bash .gpu-wheels/run.sh python3 benchmarks/probes/to_device_rounds.py [--gib 1.0] [--rounds 16]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import staging
from arrowdev.cuda import transfer  # noqa: E402
from bench_transfer import make_table, table_bytes  # noqa: E402

spent: dict[str, float] = {}


def timed(owner, name: str, label: str) -> None:
    """Adds the wall time of every call of ``owner.name`` to ``spent[label]``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args()
    table = make_table(args.gib)
    nbytes = table_bytes(table)
    src = ad.table(table)
    timed(staging._Ring, "__init__", "ring slots")
    timed(staging, "host_to_device", "staging")
    timed(transfer.Transfer, "_allocate", "device blocks")
    pinned_pool = cp.get_default_pinned_memory_pool()
    print(f"{nbytes / 1e9:.2f} GB; {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; ms per round")
    for round_ in range(args.rounds):
        spent.clear()
        cp.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        out = src.to_device()
        cp.cuda.runtime.deviceSynchronize()
        seconds = time.perf_counter() - start
        del out
        parts = "  ".join(f"{label} {value * 1e3:.1f}" for label, value in spent.items())
        print(f"round {round_:2d}: {seconds * 1e3:6.1f} ms {nbytes / seconds / 1e9:5.1f} GB/s | {parts} | "
              f"free blocks in the pinned pool {pinned_pool.n_free_blocks()}", flush=True)


if __name__ == "__main__":
    main()
