"""Probe (GPU): how often a short script of row-wise UDFs over several nullable columns gets wrong nulls when many
processes run it at once, each on a warm kernel cache (fast, so any work queued on a stream that does not wait for
arrowdev's runs early). It found the AND of the inputs' bitmaps running on CUDA's legacy stream (docs/device.md,
"Sync events"): its scratch form counted 4 to 14 wrong runs in 48 before the fix, none in 24
after it (2 x H200); this form, the next session on the same kind of machine: none in 48.

    python3 benchmarks/probes/stream_order_race.py [--runs 48] [--at-once 12]

Each run copies two tables to the GPU (columns chunked differently, strings and string views, nulls) and applies
``a * b if a > 0 else b`` and ``a == b`` over two columns; the output lists the runs whose results differ from
PyArrow's and what they got.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = """
import json
import pyarrow as pa
import arrowdev as ad

tbl = ad.table({"a": pa.chunked_array([[1, -2, 3], [4, None, -6, 7]]),
                "b": pa.chunked_array([[10, 20], [30, 40, 50, None, 70]])}).to_device()
strs = ad.table({"a": pa.array(["ann", "bob", None, "x"]),
                 "b": pa.array(["ann", "bo", "x", None], pa.string_view())}).to_device()
print(json.dumps({"rows": tbl.apply(lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).to_pylist(),
                  "equal": strs.apply(lambda a, b: a == b, columns=["a", "b"]).to_pylist()}))
"""
WANT = {"rows": [10, 20, 90, 160, None, None, 490], "equal": [True, False, None, None]}


def run_once(script: str, env: dict[str, str]) -> dict:
    """What one run got wrong (an empty dict when all is right)."""
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        return {"error": done.stderr[-400:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: got for key, got in out.items() if WANT[key] != got}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=48)
    parser.add_argument("--at-once", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "udfs.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = {**os.environ, "ARROWDEV_CACHE_DIR": os.path.join(folder, "kernels")}
        first = run_once(script, env)  # compiles the kernels into the cache the others load
        with concurrent.futures.ThreadPoolExecutor(args.at_once) as pool:
            results = list(pool.map(lambda _: run_once(script, env), range(args.runs)))
    wrong = [r for r in results if r]
    print(f"first (cold cache) run: {'right' if not first else first}")
    print(f"warm runs: {args.runs}, {args.at_once} at once; wrong: {len(wrong)}")
    for r in wrong[:5]:
        print("  ", r)


if __name__ == "__main__":
    main()
