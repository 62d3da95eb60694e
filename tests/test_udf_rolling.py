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
