"""Probe (GPU): CUDA kernels through the disk cache. Runs the warm-cache test's UDFs in three processes
sharing one cache folder: cold, warm, and warm with numba launching instead of
the direct cuda.core launch; prints each case's rows, and writes each loaded/compiled kernel's signature and
PTX digest to $OUT/kernels-<run>.txt, to find where a loaded kernel differs from a compiled one.

    OUT=/tmp bash .gpu-wheels/run.sh python3 benchmarks/probes/cuda_disk_cache.py
"""
import json, os, subprocess, sys, tempfile, textwrap

CHILD = textwrap.dedent('''
    import hashlib, json, os, sys
    import pyarrow as pa
    import arrowdev as ad
    from arrowdev.udf import cache, launch
    if sys.argv[2] == "numba-launch":
        launch._launch_direct = lambda *a, **k: False
    numbers = ad.column(pa.array([1.0, None, 3.0])).to_device()
    tbl = ad.table({"a": pa.chunked_array([[1, -2, 3], [4, None, -6, 7]]),
                    "b": pa.chunked_array([[10, 20], [30, 40, 50, None, 70]])}).to_device()
    one = ad.table({"a": pa.chunked_array([[1, -2, 3, 4, None, -6, 7]]),
                    "b": pa.chunked_array([[10, 20, 30, 40, 50, None, 70]])}).to_device()
    words = ad.column(pa.array(["ab", None, "été"])).to_device()
    out = {
        "numeric": numbers.apply(lambda x: x * 3 + 1).to_pylist(),
        "rows": tbl.apply(lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).to_pylist(),
        "rows_one_chunk": one.apply(lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).to_pylist(),
        "aware": tbl.apply(lambda a, b: (0 if a is ad.NA else a) + (0 if b is ad.NA else b), columns=["a", "b"],
                           null_aware=True).to_pylist(),
        "string": words.apply(lambda s: s.upper() + "!").to_pylist(),
        "stats": cache.stats(),
    }
    with open(os.path.join(os.environ["OUT"], f"kernels-{sys.argv[1]}.txt"), "w") as fh:
        for kernel, specialized in launch._specialized.items():
            for sig, compiled in specialized.overloads.items():
                lib = compiled._codelibrary
                ptx = "\\n".join(lib.get_asm_strs())
                fh.write(f"{sig} {compiled.entry_name} ptx={hashlib.sha256(ptx.encode()).hexdigest()[:16]} "
                         f"cubins={list(lib._cubin_cache)} link={sorted(map(str, lib._linking_files))}\\n")
                fh.write(f"  argument_types={getattr(compiled, 'argument_types', None)}\\n")
                with open(os.path.join(os.environ["OUT"], f"ptx-{sys.argv[1]}-{compiled.entry_name[-40:]}.ptx"), "w") as p:
                    p.write(ptx)
    print(json.dumps(out))
''')

folder = tempfile.mkdtemp()
script = os.path.join(folder, "child.py")
with open(script, "w") as fh:
    fh.write(CHILD)
env = dict(os.environ, ARROWDEV_CACHE_DIR=os.path.join(folder, "cache"))
results = {}
for run, mode in (("cold", "direct"), ("warm", "direct"), ("warm-numba", "numba-launch")):
    done = subprocess.run([sys.executable, script, run, mode], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode:
        print(run, "failed:", done.stderr[-3000:])
        continue
    results[run] = json.loads(done.stdout.strip().splitlines()[-1])
    print(run, json.dumps(results[run]), flush=True)
for run in ("warm", "warm-numba"):
    if run in results and "cold" in results:
        wrong = [k for k in results["cold"] if k != "stats" and results["cold"][k] != results[run][k]]
        print(f"{run}: cases differing from the cold run: {wrong}")
