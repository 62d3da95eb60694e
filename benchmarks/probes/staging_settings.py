"""Probe (GPU): ``to_device()`` of bench_transfer's table under several staging settings (worker threads,
piece size, ring slots of arrowdev/cuda/staging.py), each a wall-clock median of 7 against the pinned
memcpy of the same bytes, in one process. The figures behind staging.py's constants.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/staging_settings.py
"""
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cupy as cp  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.cuda import staging  # noqa: E402
from bench_transfer import make_table, median_seconds, table_bytes  # noqa: E402

table = make_table(1.0)
nbytes = table_bytes(table)
src = ad.table(table)
sync = cp.cuda.runtime.deviceSynchronize
pinned = cp.cuda.alloc_pinned_memory(nbytes)
device = cp.cuda.alloc(nbytes)
stream = cp.cuda.Stream(non_blocking=True)
ceiling = median_seconds(lambda: cp.cuda.runtime.memcpyAsync(device.ptr, pinned.ptr, nbytes, 1, stream.ptr), 7, sync)
print(f"{nbytes / 2**30:.2f} GiB; pinned ceiling {nbytes / ceiling / 1e9:.1f} GB/s; {staging.WORKERS} workers by "
      f"default", flush=True)
for workers, piece_mib, slots in [(8, 8, 16), (12, 8, 16), (16, 8, 16), (16, 8, 32), (16, 4, 32), (8, 4, 16),
                                  (12, 4, 24), (16, 16, 16)]:
    staging.WORKERS, staging.PIECE, staging.RING_SLOTS = workers, piece_mib << 20, slots
    staging._workers = ThreadPoolExecutor(max_workers=workers)
    seconds = median_seconds(lambda: src.to_device(), 7, sync)
    print(f"workers={workers:2d} piece={piece_mib:2d} MiB slots={slots:2d}: {nbytes / seconds / 1e9:5.1f} GB/s, "
          f"{ceiling / seconds:.2f} of the ceiling", flush=True)
