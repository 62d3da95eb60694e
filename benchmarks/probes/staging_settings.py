"""Probe (GPU): ``to_device()`` of bench_transfer's table under several staging settings (worker threads,
piece size, ring slots of arrowdev/gpu/staging.py) against the pinned memcpy of the same bytes, in one
process. The settings take turns round after round (``--rounds``), so a change in the host's load slows them
alike; each figure is the median of its rounds. The figures behind staging.py's constants.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/staging_settings.py [--rounds 11]
"""
import argparse
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cupy as cp  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import staging  # noqa: E402
from bench_transfer import interleaved_seconds, make_table, table_bytes  # noqa: E402

SETTINGS = [(12, 4, 24), (16, 4, 24), (16, 4, 32), (16, 8, 16), (14, 4, 28), (16, 2, 48), (8, 8, 16)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    table = make_table(1.0)
    nbytes = table_bytes(table)
    src = ad.table(table)
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    device = cp.cuda.alloc(nbytes)
    stream = cp.cuda.Stream(non_blocking=True)
    pools = {w: ThreadPoolExecutor(max_workers=w) for w in {s[0] for s in SETTINGS}}
    default = (staging.WORKERS, staging.PIECE >> 20, staging.RING_SLOTS)

    def ceiling():
        cp.cuda.runtime.memcpyAsync(device.ptr, pinned.ptr, nbytes, 1, stream.ptr)

    def with_settings(workers, piece_mib, slots):
        def run():
            staging.WORKERS, staging.PIECE, staging.RING_SLOTS = workers, piece_mib << 20, slots
            staging._workers = pools[workers]
            return src.to_device()
        return run

    ways = {"ceiling": ceiling, **{s: with_settings(*s) for s in SETTINGS}}
    samples = interleaved_seconds(ways, args.rounds, cp.cuda.runtime.deviceSynchronize)
    top = statistics.median(samples["ceiling"])
    print(f"{nbytes / 2**30:.2f} GiB; {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; pinned ceiling "
          f"{nbytes / top / 1e9:.1f} GB/s; default (workers, MiB, slots) {default}; {args.rounds} rounds", flush=True)
    for (workers, piece_mib, slots) in SETTINGS:
        times = samples[(workers, piece_mib, slots)]
        seconds = statistics.median(times)
        fastest = min(times)
        print(f"workers={workers:2d} piece={piece_mib:2d} MiB slots={slots:2d}: {nbytes / seconds / 1e9:5.1f} GB/s, "
              f"{top / seconds:.2f} of the ceiling (fastest round {top / fastest:.2f})", flush=True)


if __name__ == "__main__":
    main()
