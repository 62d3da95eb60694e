"""Numeric, null-aware and row-wise UDFs, on the CPU (numba) and on the GPU (numba-cuda, marker ``gpu``),
always against the same Python function applied row by row; the kernels' CUDA typing and compiling without
a GPU. Rolling windows: tests/test_udf_rolling.py."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev.udf.compile import codegen, kernels, probe
from arrowdev.udf.spec import KernelSpec
from support.samples import DEVICES, on, reference
from support.scripts import AT_ONCE

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arrow_type", INT_TYPES + [pa.float32(), pa.float64()], ids=str)
def test_element_wise_every_numeric_width(device, arrow_type):
    values = [1, None, 3, 4, None, 6, 7, 8, 9, 10, 11]
    col = on(device, pa.array(values, arrow_type))
    out = col.apply(lambda x: x * 2 + 1)
    assert out.device == col.device
    assert out.to_pylist() == reference(lambda x: x * 2 + 1, values)
    assert out.null_count == 2


@pytest.mark.parametrize("device", DEVICES)
def test_float16_inputs(device):
    """float16 is native on the GPU; numba's CPU target has none, so CPU kernels widen the bits exactly."""
    halves = np.array([1.5, -2.0, 0.0, 65504, 6e-8, np.inf, 3.25], np.float16)
    col = on(device, pa.array(halves, mask=np.array([0, 0, 0, 0, 0, 0, 1], bool)))
    out = col.apply(lambda x: x * 2 - 1, out_type=pa.float32())
    assert out.to_pylist() == [float(np.float32(v) * np.float32(2) - np.float32(1)) for v in halves[:-1]] + [None]
    if device == "cpu":
        with pytest.raises(TypeError, match="float16"):
            col.apply(lambda x: x, out_type=pa.float16())


@pytest.mark.parametrize("device", DEVICES)
def test_bool_bits_in_and_out(device):
    values = [True, False, None, True, True, False, None, False, True, True]
    col = on(device, pa.array(values))
    out = col.apply(lambda b: not b)
    assert out.type == ad.DataType.from_arrow(pa.bool_())
    assert out.to_pylist() == reference(lambda b: not b, values)
    ints = on(device, pa.array([1, 5, None, 12]))
    assert ints.apply(lambda x: x > 4).to_pylist() == [False, True, None, True]


@pytest.mark.parametrize("device", DEVICES)
def test_temporal_and_decimal_as_their_storage(device):
    ts = pa.array([0, 1_000_000, None], pa.timestamp("us"))
    out = on(device, ts).apply(lambda t: t + 86_400_000_000, out_type=pa.timestamp("us"))
    assert out.type == ad.DataType.from_arrow(pa.timestamp("us"))
    assert out.to_pyarrow().equals(pa.chunked_array([pa.array([86_400_000_000, 86_401_000_000, None], pa.timestamp("us"))]))
    dates = on(device, pa.array([0, 365, None], pa.date32()))
    assert dates.apply(lambda d: d + 1).to_pylist() == [1, 366, None]
    money = on(device, pa.array([1, 2, None], pa.decimal64(10, 2)).cast(pa.decimal64(10, 2)))
    scaled = money.apply(lambda cents: cents * 3)  # decimal64 -> its scaled integer (cents)
    assert scaled.to_pylist() == [300, 600, None]


@pytest.mark.parametrize("device", DEVICES)
def test_null_aware_udfs_see_and_return_na(device):
    values = [1, None, 3, None, 5]
    col = on(device, pa.array(values))
    fill = col.apply(lambda x: 0 if x is ad.NA else x, null_aware=True)
    assert fill.to_pylist() == [1, 0, 3, 0, 5] and fill.null_count == 0
    drop = col.apply(lambda x: ad.NA if x is ad.NA or x > 2 else x * 10, null_aware=True)
    assert drop.to_pylist() == [10, None, None, None, None] and drop.null_count == 4


@pytest.mark.parametrize("device", DEVICES)
def test_row_wise_over_columns_with_different_chunking(device):
    a = pa.chunked_array([[1, -2, 3], [4, None, -6, 7]])
    b = pa.chunked_array([[10, 20], [30, 40, 50, None, 70]])
    tbl = ad.table({"a": a, "b": b})
    if device == "cuda":
        tbl = tbl.to_device()
    f = lambda a, b: a * b if a > 0 else b  # noqa: E731
    out = tbl.apply(f, columns=["a", "b"])
    assert out.to_pylist() == reference(f, a.to_pylist(), b.to_pylist())
    aware = tbl.apply(lambda a, b: (0 if a is ad.NA else a) + (0 if b is ad.NA else b), columns=["a", "b"], null_aware=True)
    assert aware.to_pylist() == [11, 18, 33, 44, 50, -6, 77]


@pytest.mark.parametrize("device", DEVICES)
def test_sliced_and_chunked_inputs(device):
    base = pa.array([None if i % 5 == 0 else i for i in range(40)], pa.int32())
    sliced = base.slice(3, 29)  # not byte aligned
    col = on(device, pa.chunked_array([sliced.slice(0, 11), sliced.slice(11)]))
    out = col.apply(lambda x: x - 1)
    assert out.num_chunks == 2
    assert out.to_pylist() == reference(lambda x: x - 1, sliced.to_pylist())


@pytest.mark.parametrize("device", DEVICES)
def test_division_by_zero_follows_numpy(device):
    floats = on(device, pa.array([1.0, -1.0, 0.0]))
    out = floats.apply(lambda x: x / 0.0).to_pylist()
    assert out[0] == math.inf and out[1] == -math.inf and math.isnan(out[2])
    ints = on(device, pa.array([7, 8], pa.int64()))
    assert ints.apply(lambda x: x // 0).to_pylist() == [0, 0]


@pytest.mark.parametrize("device", DEVICES)
def test_kernels_are_cached_per_function_and_types(device):
    col = on(device, pa.array([1, 2, 3], pa.int64()))
    f = lambda x: x + 41  # noqa: E731
    col.apply(f)
    before = kernels.cache_size()
    assert col.apply(f).to_pylist() == [42, 43, 44]
    assert kernels.cache_size() == before
    on(device, pa.array([5, None], pa.int64())).apply(f)  # nulls: another null mode, a new kernel
    assert kernels.cache_size() == before + 1
    on(device, pa.array([1.0])).apply(f)  # new input type: a new kernel
    assert kernels.cache_size() == before + 2


def test_closures_are_part_of_the_cache_key():
    col = ad.column(pa.array([1, 2]))
    adders = [(lambda k: (lambda x: x + k))(k) for k in (1, 100)]
    assert [col.apply(f).to_pylist() for f in adders] == [[2, 3], [101, 102]]


def test_unsupported_constructs_name_the_udf_and_line():
    def bad_udf(x):
        y = x + 1
        return y.no_such_attribute

    with pytest.raises(ad.UDFCompileError, match=r"bad_udf.*line \d+.*no_such_attribute"):
        ad.column(pa.array([1, 2])).apply(bad_udf)


def test_unsupported_types_are_clear_errors():
    with pytest.raises(TypeError, match="expected a numeric, bool, temporal or string column"):
        ad.column(pa.array([[1]])).apply(lambda s: s)
    with pytest.raises(TypeError, match="string_type"):
        ad.column(pa.array(["a"])).apply(lambda s: s, out_type=pa.int64())
    with pytest.raises(TypeError, match="expected a function"):
        ad.column(pa.array([1])).apply(3)
    with pytest.raises(ValueError, match="window"):
        ad.column(pa.array([1])).rolling(0)


def test_a_udf_that_raises_raises_on_the_cpu():
    def check(x):
        if x > 2:
            raise ValueError("too big")
        return x

    assert ad.column(pa.array([1, 2])).apply(check).to_pylist() == [1, 2]
    with pytest.raises(ValueError, match="too big"):
        ad.column(pa.array([1, 3])).apply(check)


@pytest.mark.parametrize("device", DEVICES)
def test_membership_in_constant_lists(device):
    values = [59, 7, None, 980, 1027, 3]
    col = on(device, pa.array(values, pa.int64()))
    member = lambda x: x in [1027, 1000, 59, 980, 1027, 1000, 59, 980]  # noqa: E731
    assert col.apply(member).to_pylist() == reference(member, values)
    outside = lambda x: x not in (1.5, 3)  # noqa: E731
    assert col.apply(outside).to_pylist() == reference(outside, values)
    floats = on(device, pa.array([59.0, 59.5, None]))
    assert floats.apply(member).to_pylist() == [True, False, None]


def test_constant_sets_compile_to_a_compare_chain_without_a_gpu():
    from numba import cuda
    from numba.core import types

    from arrowdev.udf.compile.constant_sets import ConstantSet, with_constant_sets

    member = lambda x: x in [1027, 1000, 59, 980, 1027, 1000, 59, 980]  # noqa: E731
    rewritten = with_constant_sets(member, "cuda")
    assert any(isinstance(c, ConstantSet) for c in rewritten.__code__.co_consts)
    assert rewritten(59) and not rewritten(5)  # same meaning in plain Python
    ptx, result = cuda.compile_ptx(rewritten, (types.int64,), device=True, cc=probe.CI_COMPUTE_CAPABILITY)
    assert str(result) == "bool"
    assert "bra" not in ptx.split("{", 1)[1]  # no loop: one comparison per distinct constant, no branch
    untouched = lambda x: x + 1  # noqa: E731
    assert with_constant_sets(untouched) is untouched


# ---- the CUDA target's typing and lowering, without a GPU (numba.cuda.compile_ptx) ---------------

CUDA_UDFS = [
    (lambda x: x * 2 + 1, ((np.dtype("float64").str, False),), "none"),
    (lambda x: 0 if x is ad.NA else x, ((np.dtype("int64").str, True),), "aware"),
    (lambda a, b: a * b if a > 0 else b, ((np.dtype("int32").str, True), (np.dtype("int64").str, False)), "propagate"),
    (lambda b: not b, (("bits", False),), "none"),
    (lambda x: x in [1027, 1000, 59, 980, 1027, 1000, 59, 980], ((np.dtype("int64").str, False),), "none"),
]


@pytest.mark.parametrize("f,inputs,mode", CUDA_UDFS)
def test_cuda_typing_and_lowering_without_a_gpu(f, inputs, mode):
    spec = KernelSpec(inputs, mode, "", "cuda")
    assert probe.udf_result_type(f, spec) is not None
    assert "def kernel(" in codegen.kernel_source(KernelSpec(inputs, mode, "<f8", "cuda"))


@pytest.mark.parametrize("inputs,mode", [((("<f8", False),), "none"), ((("<f8", False), ("<f8", False)), "none")])
def test_a_cpu_kernel_over_numbers_is_a_vectorized_loop(inputs, mode):
    """A CPU kernel reads row i of each number column as ``s{k}[i]``, a view from the column's offset, so that
    LLVM vectorizes the loop with plain vector loads and stores: indexing ``d{k}[o{k} + i]`` needs a negative-index
    check in every row, and its loop gathered and scattered (7x slower at 10^6 rows; docs/hosts.md)."""
    import numba

    spec = KernelSpec(inputs, mode, "<f8", "cpu")
    source = codegen.kernel_source(spec)
    assert "o0 + i" not in source and "pad + i" not in source, source
    f = (lambda x: x * 2 + 1 if x > 0.5 else x - 1) if len(inputs) == 1 else (lambda a, b: a * b if a > 0 else b)
    namespace = {"np": np, "udf": numba.njit(error_model="numpy")(f)}
    exec(compile(source, "<kernel>", "exec"), namespace)
    kernel = numba.njit(error_model="numpy")(namespace["kernel"])
    signature = _kernel_arg_types(spec)
    kernel.compile(signature)
    ir = kernel.inspect_llvm(signature)
    assert re.search(r"<\d+ x double>", ir), "the kernel's loop is not vectorized"
    # row by row from d{k}[o{k} + i], the loop was vectorized with gathers and scatters (vectors of pointers)
    assert not re.search(r"<\d+ x (ptr|double\*)>", ir), "the kernel's loop gathers its rows one address at a time"


BALLOT_UDFS = [  # bool results written as bits by warp ballots: whole kernels, not just the UDF
    (lambda x: x in [1027, 1000, 59, 980], (("<i8", False),), "ld.global.cs.b64"),
    (lambda x: x > 0.5, (("<f4", True),), "ld.global.cs.b32"),
    (lambda a, b: a and not b, (("bits", True), ("bits", False)), None),
    (lambda s: s.startswith("ab"), (("utf8_32", True),), None),
    (lambda s: len(s) > 3, (("utf8_view", False),), None),
]


def _kernel_arg_types(spec):
    """numba types of a kernel's arguments as apply.py passes them (see codegen.kernel_source)."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    array = lambda dtype: types.Array(dtype, 1, "C")  # noqa: E731
    data = {"bits": types.uint8, "utf8_32": types.int32, "utf8_64": types.int64, "utf8_view": types.int32}
    outputs = {"ballot": types.uint32, "bits": types.uint8, "utf8_pairs": types.int64, "utf8_view": types.int32}
    out = outputs.get(spec.out) or from_dtype(np.dtype(spec.out))
    args = [types.int64, types.int64, array(out), array(types.uint8), types.int64]
    for dtype, _ in spec.inputs:
        element = data.get(dtype) or from_dtype(np.dtype(dtype))
        extra = array(types.int64) if dtype == "utf8_view" else types.int64
        args += [array(element), array(types.uint8), types.int64, extra]
    return tuple(args)


def _kernel_ptx(f, spec, monkeypatch):
    """PTX of the whole kernel for ``spec`` (UDF inlined), compiled without a GPU."""
    import types

    from numba import cuda
    from numba.cuda import dispatcher

    # a device function called from a kernel compiles for the current device: name CI's instead
    ci_device = types.SimpleNamespace(compute_capability=probe.CI_COMPUTE_CAPABILITY)
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: ci_device)
    kernel = kernels.compile_kernel(f, spec)
    return cuda.compile_ptx(kernel.py_func, _kernel_arg_types(spec), cc=probe.CI_COMPUTE_CAPABILITY)[0]


@pytest.mark.parametrize("f,inputs,mode", CUDA_UDFS)
def test_whole_cuda_kernels_compile_without_a_gpu(f, inputs, mode, monkeypatch):
    out = "<f8" if mode != "aware" else "<i8"
    ptx = _kernel_ptx(f, KernelSpec(inputs, mode, out, "cuda"), monkeypatch)
    assert ".entry" in ptx and "st.global" in ptx


STRING_KERNELS = [  # kernels with an arena (NRT on): strings made, rows that may fail, both output layouts
    (lambda s: s.upper() + "!", (("utf8_32", True),), "propagate", "utf8_pairs"),
    (lambda s: s + s, (("utf8_view", False),), "none", "utf8_view"),
    (lambda s: s.strip().lower() if s is not ad.NA else ad.NA, (("utf8_64", True),), "aware", "utf8_pairs"),
    (lambda s: float(s), (("utf8_32", True),), "propagate", "<f8"),
]


@pytest.mark.parametrize("f,inputs,mode,out", STRING_KERNELS)
def test_string_making_kernels_compile_for_cuda_without_a_gpu(f, inputs, mode, out, monkeypatch):
    from arrowdev.udf.compile import nrt

    spec = KernelSpec(inputs, mode, out, "cuda", arena=True, flags=True)
    with nrt.cuda_nrt():
        ptx = _kernel_ptx(f, spec, monkeypatch)
    assert ".entry" in ptx and "arrowdev_arena_state" in ptx  # rows find the launch's arena
    if out.startswith("utf8"):  # a string's block is claimed by an atomic add
        assert "atom.global.add" in ptx or "atom.add" in ptx


def test_managed_strings_are_counted_in_line_on_cuda_without_a_gpu(monkeypatch):
    """A string UDF compiled for CUDA changes its strings' counts in line (strings/refcounts.py): no call to
    NRT's out-of-line, fenced NRT_incref / NRT_decref anywhere in its code."""
    from numba import cuda

    from arrowdev.udf.compile import nrt
    from arrowdev.udf.spec import Target
    from arrowdev.udf.compile.strings import intrinsics
    from arrowdev.udf.compile.strings.numba_types import string_types

    intrinsics()["cuda"]  # registers the string extension with the CUDA target
    f = probe.prepared(lambda s: (s.upper() + "!").lower() + s[1:] + s.strip(), Target.CUDA)
    with nrt.cuda_nrt():
        ptx, result = cuda.compile_ptx(f, (string_types().string_view,), device=True, cc=probe.CI_COMPUTE_CAPABILITY)
    assert str(result) == "ManagedString"
    assert not re.search(r"NRT_(incref|decref)", ptx) and "NRT_MemInfo_call_dtor" in ptx


@pytest.mark.parametrize("f,inputs,streamed", BALLOT_UDFS)
def test_ballot_kernels_compile_for_cuda_without_a_gpu(f, inputs, streamed, monkeypatch):
    mode = "propagate" if any(valid for _, valid in inputs) else "none"
    ptx = _kernel_ptx(f, KernelSpec(inputs, mode, "ballot", "cuda"), monkeypatch)
    assert ptx.count("vote.sync.ballot") == codegen.BALLOT_ROWS  # one vote per word a warp covers
    if streamed:  # plain numbers are read with streaming loads, all rows' loads before the first vote
        body = ptx.split("vote.sync.ballot", 1)[0]
        assert body.count(streamed) == codegen.BALLOT_ROWS
    else:
        assert "ld.global.cs" not in ptx


def test_cuda_target_refuses_raise_and_reports_typing_errors():
    def raising(x):
        if x > 1:
            raise ValueError("no")
        return x

    spec = KernelSpec(((np.dtype("int64").str, False),), "none", "", "cuda")
    with pytest.raises(ad.UDFCompileError, match="raise"):
        probe.udf_result_type(raising, spec)
    with pytest.raises(ad.UDFCompileError, match="no_such"):
        probe.udf_result_type(lambda x: x.no_such, spec)


# ---- property tests against the row-by-row reference ------------------------------------------

values_with_nulls = st.lists(st.one_of(st.none(), st.integers(-10**6, 10**6)), min_size=0, max_size=60)


@settings(max_examples=40, deadline=None)
@given(values=values_with_nulls, start=st.integers(0, 20), chunk=st.integers(1, 25))
def test_property_cpu(values, start, chunk):
    _check_property("cpu", values, start, chunk)


@pytest.mark.gpu
@settings(max_examples=25, deadline=None)
@given(values=values_with_nulls, start=st.integers(0, 20), chunk=st.integers(1, 25))
def test_property_gpu(values, start, chunk):
    _check_property("cuda", values, start, chunk)


def _check_property(device, values, start, chunk):
    arr = pa.array(values, pa.int64()).slice(min(start, len(values)))
    pieces = [arr.slice(i, chunk) for i in range(0, len(arr), chunk)] or [arr]
    col = on(device, pa.chunked_array(pieces, type=pa.int64()))
    f = lambda x: x * 3 - 1 if x % 2 else x // 2  # noqa: E731
    assert col.apply(f).to_pylist() == reference(f, arr.to_pylist())
    g = lambda x: -1 if x is ad.NA else x  # noqa: E731
    assert col.apply(g, null_aware=True).to_pylist() == reference(g, arr.to_pylist(), null_aware=True)


@pytest.mark.gpu
def test_nulls_of_several_inputs_are_combined_on_the_calls_stream_behind_its_queued_work():
    """The validity of a row-wise UDF over several nullable columns (the AND of their bitmaps) is computed on the
    call's stream: it once ran on CUDA's legacy stream, which does not wait for a non-blocking one, so it read
    the unpacked bitmaps before the kernels writing them had run, and rows came back null at random (1 run in 8
    of tests/test_udf_cache.py's warm-cache script). Here the call's stream is held back by ~0.1 s of spinning,
    so anything queued elsewhere runs first, every time."""
    import cupy

    from support.slow_write import slow_write

    rng = np.random.default_rng(7)
    n = 100_000
    a = pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.3)
    b = pa.chunked_array([pa.array(rng.integers(0, 9, n // 2), mask=rng.random(n // 2) < 0.3),
                          pa.array(rng.integers(0, 9, n - n // 2), mask=rng.random(n - n // 2) < 0.3)])
    tbl = ad.table({"a": pa.chunked_array([a.slice(0, 3), a.slice(3)]), "b": b}).to_device()
    f = lambda a, b: a * b if a > 0 else b  # noqa: E731
    want = reference(f, a.to_pylist(), b.to_pylist())
    slow = cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):
        slow_write(cupy, cupy.empty(1, dtype=cupy.int64), slow)
        out = tbl.apply(f, columns=["a", "b"], stream=slow)
        assert out.to_pylist() == want


@pytest.mark.gpu
def test_gpu_threads_launching_the_same_new_kernel_at_once_all_get_right_values():
    """numba-cuda loads a kernel's module into the context at its first launch, unguarded: two threads that
    launched one new kernel at once both loaded it, and one failed with "key already in dictionary:
    <CUlibrary ...>" (seen with Polars calling a GPU UDF). Each round a new kernel, 8 threads released at once."""
    code = AT_ONCE + textwrap.dedent("""
        import pyarrow as pa, arrowdev as ad
        col = ad.column(pa.array([1.0, None, 3.0] * 1000)).to_device()
        for round in range(6):
            f = eval(f"lambda x: x * {round + 2} + 1")  # a new function: a new kernel
            results = at_once(8, lambda k: col.apply(f).to_pylist())
            want = [1.0 * (round + 2) + 1, None, 3.0 * (round + 2) + 1] * 1000
            assert all(r == want for r in results.values()) and len(results) == 8
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
