"""Probe (no GPU needed): the CUDA kernels arrowdev generates, as Python source (``codegen.kernel_source`` for
Target.CUDA specs) and as PTX (numba-cuda's ``compile_ptx`` for sm_90, which needs no GPU), written one file each
to a folder with a list of their SHA-256 sums (the PTX normalized: literals' symbols, which hold a salted hash, and
the function counts in mangled names renamed, the module's global declarations sorted). Run it on two checkouts
and compare the sums (or ``diff -r``): a change meant for the CPU target only must leave every file
byte-identical.

    python3 benchmarks/probes/cuda_sources.py OUT_DIR [--compare OTHER_DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import types
from pathlib import Path

import numpy as np

# no disk cache: a typing probe loaded from it instead of compiled changes which compile of a string operation
# comes first, and with it the ABI tag in its environment's symbol (the code is the same either way)
os.environ["ARROWDEV_CACHE_DIR"] = ""
import arrowdev as ad  # noqa: E402
from arrowdev.udf.compile import codegen, kernels, nrt, probe  # noqa: E402
from arrowdev.udf.spec import KernelSpec  # noqa: E402

F8, I8, I4 = np.dtype("float64").str, np.dtype("int64").str, np.dtype("int32").str
# (name, UDF, inputs, null mode, output kind, arena): numbers, bits, and the string UDFs of the benchmarks
KERNELS = [
    ("piecewise", lambda x: x * 2 + 1 if x > 0.5 else x - 1, ((F8, False),), "none", F8, False),
    ("two_columns", lambda a, b: a * b if a > 0 else b, ((I4, True), (I8, False)), "propagate", I8, False),
    ("aware", lambda x: 0 if x is ad.NA else x, ((I8, True),), "aware", I8, False),
    ("not_bits", lambda b: not b, (("bits", False),), "none", "bits", False),
    ("upper_bang_32", lambda s: s.upper() + "!", (("utf8_32", True),), "propagate", "utf8_pairs", True),
    ("upper_bang_view", lambda s: s.upper() + "!", (("utf8_view", False),), "none", "utf8_pairs", True),
    ("concat_32", lambda s: s + "!", (("utf8_32", False),), "none", "utf8_pairs", True),
    ("concat_view", lambda s: s + "!", (("utf8_view", True),), "propagate", "utf8_pairs", True),
    ("replace_32", lambda s: s.replace("a", "b"), (("utf8_32", False),), "none", "utf8_pairs", True),
    ("replace_64", lambda s: s.replace("a", "bc"), (("utf8_64", True),), "propagate", "utf8_pairs", True),
    ("store_view", lambda s: s + s, (("utf8_view", False),), "none", "utf8_view", True),
    ("aware_strip_lower", lambda s: s.strip().lower() if s is not ad.NA else ad.NA, (("utf8_64", True),), "aware",
     "utf8_pairs", True),
    ("float_of", lambda s: float(s), (("utf8_32", True),), "propagate", F8, True),
    ("cases", lambda s: s.title() + s.swapcase() + s.capitalize() + s.lower(), (("utf8_32", False),), "none",
     "utf8_pairs", True),
    ("slices", lambda s: s[1:].strip() + s[::2] + s.zfill(9) + s.center(12, "*") + s * 2, (("utf8_32", False),),
     "none", "utf8_pairs", True),
    ("parse", lambda s: str(int(s) + 1) + s.replace("", "-"), (("utf8_32", False),), "none", "utf8_pairs", True),
]


def _arg_types(spec: KernelSpec) -> tuple:
    """numba types of a kernel's arguments as arrowdev passes them (codegen.kernel_source's parameters)."""
    from numba.core import types as nt
    from numba.np.numpy_support import from_dtype

    array = lambda dtype: nt.Array(dtype, 1, "C")  # noqa: E731
    data = {"bits": nt.uint8, "utf8_32": nt.int32, "utf8_64": nt.int64, "utf8_view": nt.int32}
    outputs = {"ballot": nt.uint32, "bits": nt.uint8, "utf8_pairs": nt.int64, "utf8_view": nt.int32}
    out = outputs.get(spec.out.value) or from_dtype(np.dtype(spec.out.value))
    args = [nt.int64, nt.int64, array(out), array(nt.uint8), nt.int64]
    for dtype, _ in spec.inputs:
        element = data.get(dtype.value) or from_dtype(np.dtype(dtype.value))
        extra = array(nt.int64) if dtype.value == "utf8_view" else nt.int64
        args += [array(element), array(nt.uint8), nt.int64, extra]
    return tuple(args)


def _fixed_kernels(out: Path, sums: dict[str, str]) -> None:
    """The string gather, views and range-gather kernels (the same for every UDF)."""
    from numba import cuda
    from numba.core import types as nt

    from arrowdev.udf.compile.strings import intrinsics
    from arrowdev.udf.run import string_gathers as results

    array = lambda dtype: nt.Array(dtype, 1, "C")  # noqa: E731
    i64, u8 = array(nt.int64), array(nt.uint8)
    signatures = {"gather": (nt.int64, i64, i64, nt.int64, nt.int64),
                  "make_views": (nt.int64, i64, i64, array(nt.int32), nt.int64, nt.int64),
                  "gather_range": (nt.int64, i64, i64, nt.int64, array(nt.int32), nt.int64, nt.int64, nt.int64, i64,
                                   array(nt.int8), nt.int64, u8, u8, nt.int64, i64, i64, nt.int64, i64)}
    rows = str(results.GATHER_ROWS)
    for name, source in (("gather", results._GATHER_CUDA.replace("ROWS", rows)),
                         ("make_views", results._VIEWS_SOURCE["cuda"]),
                         ("gather_range", results._GATHER_RANGE_CUDA.replace("ROWS", rows))):
        namespace = dict(intrinsics()["cuda"], cuda=cuda, np=np, WARPS=256 // 32, __name__=results.__name__)
        exec(compile(source, f"<{name}>", "exec"), namespace)
        _write(out, f"fixed_{name}.py", source, sums)
        _write(out, f"fixed_{name}.ptx", _normalized(cuda.compile_ptx(
            namespace[name], signatures[name], cc=probe.CI_COMPUTE_CAPABILITY)[0]), sums)


def _normalized(ptx: str) -> str:
    """PTX with what changes from one process to the next made the same: a literal's symbol holds Python's
    (salted) hash of its bytes, and the module's global declarations come in the order of a set."""
    ptx = re.sub(r"arrowdev_utf8_[0-9a-f]+_", "arrowdev_utf8_HASH_", ptx)
    ptx = re.sub(r"B\d+v\d+B", "BvB", ptx)  # numba's count of functions compiled so far, in mangled names
    lines = ptx.splitlines(keepends=True)
    declared = [k for k, line in enumerate(lines) if re.match(r"\.(common|weak|extern)?\s*\.?global", line)]
    if declared:
        first, last = declared[0], declared[-1]
        lines[first:last + 1] = sorted(lines[first:last + 1])
    return "".join(lines)


def _write(out: Path, name: str, text: str, sums: dict[str, str]) -> None:
    (out / name).write_text(text)
    sums[name] = hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, help="a folder this probe wrote before: report what differs")
    args = parser.parse_args()
    from numba import cuda
    from numba.cuda import dispatcher

    # a device function called from a kernel compiles for the current device: name sm_90 where there is none
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=probe.CI_COMPUTE_CAPABILITY)
    args.out.mkdir(parents=True, exist_ok=True)
    sums: dict[str, str] = {}
    for name, f, inputs, mode, out, arena in KERNELS:
        spec = KernelSpec(inputs, mode, out, "cuda", arena=arena, flags=arena)
        _write(args.out, f"{name}.py", codegen.kernel_source(spec), sums)
        with nrt.cuda_nrt():
            kernel = kernels.compile_kernel(f, spec)
            ptx = cuda.compile_ptx(kernel.py_func, _arg_types(spec), cc=probe.CI_COMPUTE_CAPABILITY)[0]
        _write(args.out, f"{name}.ptx", _normalized(ptx), sums)
    _fixed_kernels(args.out, sums)
    (args.out / "SHA256SUMS").write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))
    print(f"{len(sums)} files in {args.out}")
    if args.compare:
        before = dict(line.split("  ")[::-1] for line in (args.compare / "SHA256SUMS").read_text().splitlines())
        differ = sorted(name for name in sums if before.get(name) != sums[name])
        print("identical to", args.compare if not differ else f"DIFFERENT from {args.compare}: {differ}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
