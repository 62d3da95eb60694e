"""ad.debug.leak_check(): it passes on code that drops what it makes, names what leaked, and counts device
memory and (when NRT ran) numba's NRT allocations."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowdev as ad
from support.scripts import run_script


def test_leak_check_passes_on_code_that_drops_what_it_makes():
    with ad.debug.leak_check():
        col = ad.column(pa.chunked_array([[1, 2], [3]]))
        tbl = ad.table({"a": col})
        assert pa.table(tbl).num_rows == 3
        del col, tbl


def test_leak_check_names_what_leaked():
    kept = []
    with pytest.raises(ad.debug.LeakError, match="live_containers: 0 -> 1|live_containers: \\d+ -> \\d+"):
        with ad.debug.leak_check():
            kept.append(ad.column(pa.array([1, 2, 3])))
    capsules = []
    with pytest.raises(ad.debug.LeakError, match="live_exported_nodes"):
        with ad.debug.leak_check():
            capsules.append(ad.column(pa.array([1])).__arrow_c_device_array__())
    assert isinstance(ad.debug.LeakError("x"), AssertionError)


@pytest.mark.gpu
def test_leak_check_covers_device_memory():
    with ad.debug.leak_check():
        g = ad.column(pa.array(list(range(1000)))).to_device()
        assert g.apply(lambda x: x + 1).to_host().to_pylist()[-1] == 1000
        del g
    kept = []
    with pytest.raises(ad.debug.LeakError, match="device bytes in use"):
        with ad.debug.leak_check():
            kept.append(ad.column(pa.array([1.0] * 1000)).to_device())


@pytest.mark.gpu
def test_leak_check_counts_nrt_when_nrt_ran():
    out = run_script("""
        import numpy as np
        from numba import cuda
        import arrowdev as ad
        from arrowdev import debug

        @cuda.jit
        def kernel(out):
            scratch = np.zeros(4)  # an NRT allocation inside the kernel
            scratch[1] = 2.0
            out[0] = scratch.sum()

        out = cuda.device_array(1)
        with ad.debug.leak_check():
            kernel[1, 1](out)
            cuda.synchronize()
        counts = debug._snapshot()
        assert "NRT allocations" in counts and "NRT MemInfos" in counts, counts
        assert out.copy_to_host()[0] == 2.0
        print("ok", counts["NRT allocations"], counts["NRT MemInfos"])
    """, {"NUMBA_CUDA_ENABLE_NRT": "1", "NUMBA_CUDA_NRT_STATS": "1"})
    assert out.split() == ["ok", "0", "0"]
