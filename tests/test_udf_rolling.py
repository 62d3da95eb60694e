"""Rolling-window UDFs (``col.rolling(...).apply``), on the CPU (numba) and on the GPU (numba-cuda, marker
``gpu``), against pandas' rolling windows over the same values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from support.samples import DEVICES, on


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("window,min_periods,center", [(3, None, False), (3, 1, False), (4, 2, True), (1, 1, False)])
def test_rolling_matches_pandas(device, window, min_periods, center):
    values = [1.0, None, 3.0, 4.0, 5.0, None, None, 8.0, 9.0, 10.0, 11.0]
    col = on(device, pa.chunked_array([values[:4], values[4:]]))
    out = col.rolling(window, min_periods=min_periods, center=center).apply(lambda w: w.sum())
    expected = pd.Series(values, dtype=float).rolling(window, min_periods=min_periods, center=center).sum()
    assert out.to_pylist() == [None if math.isnan(v) else v for v in expected]
    def spread(w):  # numba-cuda has no array max/min reductions: a loop works on both targets
        hi, lo = w[0], w[0]
        for v in w:
            hi, lo = max(hi, v), min(lo, v)
        return hi - lo

    means = col.rolling(window, min_periods=min_periods, center=center).apply(spread)
    want = pd.Series(values, dtype=float).rolling(window, min_periods=min_periods, center=center).apply(
        lambda w: np.nanmax(w) - np.nanmin(w) if np.isfinite(w).any() else np.nan, raw=True)
    assert means.to_pylist() == [None if math.isnan(v) else v for v in want]


@pytest.mark.parametrize("device", DEVICES)
def test_rolling_windows_can_be_looped_and_indexed(device):
    col = on(device, pa.array([1, 2, 3, 4, 5], pa.int64()))

    def weighted(w):
        total = 0
        for k in range(len(w)):
            total += w[k] * (k + 1)
        return total

    out = col.rolling(3, min_periods=1).apply(weighted)
    assert out.to_pylist() == [1, 1 + 4, 1 + 4 + 9, 2 + 6 + 12, 3 + 8 + 15]


# ---- the window's array methods, on both targets --------------------------------------------------

WINDOW_METHODS = ["max", "min", "mean", "std", "var", "prod", "argmax", "argmin", "any", "all", "sum"]
WINDOW_VALUES = {
    "float64": pa.array([1.5, None, -3.0, 4.0, float("nan"), 2.0, None, 0.0, 7.25], pa.float64()),
    "int64": pa.array([3, None, -1, 4, 0, 2, None, 5, 5], pa.int64()),
    "int32": pa.array([1, 2, None, 3, -4, 2], pa.int32()),
    "float32": pa.array([0.5, 1.0, None, -2.0, 3.5], pa.float32()),
    "uint8": pa.array([1, 2, 3, None, 250, 4], pa.uint8()),
    "bool": pa.array([True, None, False, True, True, False]),
}


# On the CPU the methods are numba's own (two types show the expectations right); on the GPU arrowdev's, every type
WINDOW_CASES = [("cpu", "float64"), ("cpu", "bool")] + [pytest.param("cuda", t, marks=pytest.mark.gpu)
                                                         for t in WINDOW_VALUES]


@pytest.mark.parametrize("device,dtype", WINDOW_CASES)
@pytest.mark.parametrize("method", WINDOW_METHODS)
def test_window_array_methods_follow_numpy_on_both_targets(device, dtype, method):
    """``w.max()``, ``w.mean()``, ... on a window: NumPy's values and NaN rules, numba's CPU result types, on the
    CPU (numba's own methods) and on the GPU (arrowdev's, udf/compile/window_methods.py)."""
    data = WINDOW_VALUES[dtype]
    col = on(device, data)
    f = eval(f"lambda w: w.{method}()")  # noqa: S307  (one UDF per method, as a user writes it)
    out = col.rolling(3, min_periods=2).apply(f).to_pylist()
    values = data.to_pylist()
    expected = []
    for i in range(len(values)):
        present = [v for v in values[max(i - 2, 0):i + 1] if v is not None]
        if len(present) < 2:
            expected.append(None)
        else:
            expected.append(getattr(np.array(present, dtype=data.type.to_pandas_dtype()), method)().item())
    assert len(out) == len(expected)
    for got, want in zip(out, expected):
        if want is None or (isinstance(want, float) and math.isnan(want)):
            assert got is None if want is None else math.isnan(got)
        else:
            assert got == pytest.approx(want, rel=1e-6), (got, want)


@pytest.mark.parametrize("device", DEVICES)
def test_a_pandas_users_first_rolling_udf_runs_on_both_targets(device):
    col = on(device, pa.array([1.0, 5.0, 2.0, None, 8.0, 3.0]))
    out = col.rolling(3, min_periods=1).apply(lambda w: w.max() - w.min())
    want = pd.Series([1.0, 5.0, 2.0, None, 8.0, 3.0]).rolling(3, min_periods=1).apply(lambda w: np.nanmax(w) - np.nanmin(w),
                                                                                        raw=True)
    assert out.to_pylist() == want.tolist()
    sliced = col.rolling(4, min_periods=2).apply(lambda w: w[1:].mean() if len(w) > 1 else w.std())
    assert sliced.to_pylist()[2] == pytest.approx(3.5)


@pytest.mark.parametrize("dtype", ["<f8", "<f4", "<i8", "|u1", "bits"])
def test_window_methods_compile_for_cuda_without_a_gpu(dtype, monkeypatch):
    """Every method above, typed, lowered and compiled into a whole rolling kernel's PTX (no GPU needed)."""
    import types

    from numba import cuda
    from numba.core import types as nt
    from numba.cuda import dispatcher
    from numba.np.numpy_support import from_dtype

    from arrowdev.udf.compile import kernels, probe
    from arrowdev.udf.spec import KernelSpec

    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=probe.CI_COMPUTE_CAPABILITY))
    body = " + ".join(f"(w.{m}() + 0)" for m in WINDOW_METHODS) + " + (w[1:].max() + 0 if len(w) > 1 else 0)"
    f = eval(f"lambda w: {body}")  # noqa: S307
    spec = KernelSpec(((dtype, True),), "aware", "<f8", "cuda", 3, 1, False)
    kernel = kernels.compile_kernel(f, spec)
    element = nt.uint8 if dtype == "bits" else from_dtype(np.dtype(dtype))
    array = lambda t: nt.Array(t, 1, "C")  # noqa: E731
    args = (nt.int64, nt.int64, array(nt.float64), array(nt.uint8), nt.int64, array(element), array(nt.uint8),
            nt.int64, nt.int64)
    ptx = cuda.compile_ptx(kernel.py_func, args, cc=probe.CI_COMPUTE_CAPABILITY)[0]
    assert ".entry" in ptx and "npy_max" not in ptx
