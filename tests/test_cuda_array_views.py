"""CUDA array views (``__cuda_array_interface__``) checked without a GPU: what a view may claim about the
column's memory. Views on a GPU: tests/test_cuda.py."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad


def test_a_cuda_array_view_needs_a_numpy_dtype_of_the_arrow_width():
    """pandas' dtype for date32 is datetime64[ms], 8 bytes a value over date32's 4: a view with it would read two
    dates as one. Refused before any GPU call (a column that says it is on CUDA over host buffers shows it);
    float64, timestamps and durations keep their dtypes."""
    from support import fake_ipc

    fake = fake_ipc.FakeCudaCalls()
    dates = fake_ipc.device_column(fake, pa.array([datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)]))
    with pytest.raises(TypeError, match=r"date32\[day\] \(32 bits, NumPy's nearest datetime64\[ms\] has 64\): cast"):
        dates.__cuda_array_interface__
    from arrowdev.interop.cuda_arrays import _numpy_dtype

    for arrow, want in [(pa.float64(), "float64"), (pa.timestamp("ns"), "datetime64[ns]"), (pa.duration("s"), "timedelta64[s]"),
                        (pa.date64(), "datetime64[ms]"), (pa.int16(), "int16")]:
        col = ad.column(pa.array([None], arrow))
        assert _numpy_dtype(col) == np.dtype(want) and _numpy_dtype(col) == np.dtype(want)  # the second from the cache
