"""Shared fixtures. GPU tests carry the ``gpu`` marker and skip by themselves without a GPU."""

from __future__ import annotations

import gc

import pytest

import arrowdev as ad


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords and not GPU:
            item.add_marker(skip)


@pytest.fixture
def balanced():
    """Asserts that a test leaves arrowdev's held arrays and exports as it found them."""
    gc.collect()
    before = ad.debug.ownership_stats()
    yield
    gc.collect()
    after = ad.debug.ownership_stats()
    for key in ("live_containers", "live_exported_nodes", "live_exported_streams", "live_built_nodes",
                "live_node_blocks"):
        assert after[key] == before[key], f"{key}: {before[key]} before, {after[key]} after"


@pytest.fixture(autouse=True)
def _gpu_tests_do_not_leak(request):
    """Every GPU test runs inside ad.debug.leak_check(): containers, exports, device and pinned
    buffers must balance (NRT too, when NRT statistics are on)."""
    if "gpu" not in request.keywords:
        yield
        return
    with ad.debug.leak_check():
        yield
