"""The numba EMM plugin over arrowdev's pool (arrowdev.cuda.numba_emm): numba's interface, installed before
numba's first context (refused after it), numba's arrays drawn from the accounted pool."""

from __future__ import annotations

import pytest

from support.scripts import run_script


def test_plugin_implements_numba_interface_version_1():
    from numba.cuda.cudadrv.driver import BaseCUDAMemoryManager

    from arrowdev.cuda import numba_emm

    plugin = numba_emm._numba_memory_manager(context=None)
    assert isinstance(plugin, BaseCUDAMemoryManager)
    assert plugin.interface_version == 1
    for name in ("memalloc", "memhostalloc", "mempin", "initialize", "get_memory_info", "get_ipc_handle",
                 "reset", "defer_cleanup"):
        assert callable(getattr(plugin, name))


def test_use_for_numba_installs_the_plugin_before_a_context():
    run_script("""
        import arrowdev as ad
        from numba.cuda.cudadrv import driver
        ad.cuda.use_for_numba()
        assert driver._memory_manager.__name__ == "ArrowdevNumbaMemoryManager"
        print("ok")
    """)


@pytest.mark.gpu
def test_use_for_numba_after_numba_made_a_context_raises():
    run_script("""
        from numba import cuda
        import arrowdev as ad
        cuda.device_array(4)  # numba's own manager makes the context
        try:
            ad.cuda.use_for_numba()
        except RuntimeError as e:
            assert "before numba's first device array" in str(e)
            print("refused")
        else:
            raise SystemExit("not refused")
    """)


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["env", "call"])
def test_numba_arrays_come_from_the_accounted_pool(how):
    out = run_script("""
        import sys, gc, numpy as np
        import arrowdev as ad
        if sys.argv[1] == "call":
            ad.cuda.use_for_numba()
        from numba import cuda
        before = ad.cuda.memory_stats()
        arr = cuda.to_device(np.arange(1 << 20, dtype=np.float64))
        mid = ad.cuda.memory_stats()
        assert mid["bytes_in_use"] - before["bytes_in_use"] == 8 << 20, (before, mid)
        assert arr.copy_to_host()[-1] == (1 << 20) - 1
        handle = cuda.current_context().get_ipc_handle(arr.gpu_data)  # the plugin's get_ipc_handle
        assert handle.size == 8 << 20 and handle.offset >= 0  # the pool block's handle, the array's offset in it
        with cuda.defer_cleanup():
            del arr, handle
            gc.collect()
            held = ad.cuda.memory_stats()["bytes_in_use"] - before["bytes_in_use"]
        after = ad.cuda.memory_stats()
        assert held == 8 << 20, held                            # held while cleanup is deferred
        assert after["bytes_in_use"] == before["bytes_in_use"]  # back to the pool after
        free, total = cuda.current_context().get_memory_info()
        assert 0 < free <= total
        print("ok", mid["allocations"] - before["allocations"])
    """, {"NUMBA_CUDA_MEMORY_MANAGER": "arrowdev.cuda.numba_emm"} if how == "env" else None, how)
    assert out.startswith("ok")
