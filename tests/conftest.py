"""Shared fixtures and the rules of what may skip.

- GPU tests carry the ``gpu`` marker and skip by themselves without a GPU.
- Tests that compile for the CUDA target without a GPU (numba-cuda and NVVM, the ``kernels`` extra, about
  1 GB) carry the ``numba_cuda`` marker, given here to every non-GPU test function whose name says ``cuda``
  (or ``compile`` and ``without_a_gpu``); without numba-cuda they skip, naming the extra to install.
- In CI (``CI=true``) nothing but GPU tests may skip: any other skip is reported as a failure, so a missing
  extra (numba-cuda, Sphinx, matplotlib) fails CI instead of hiding tests.
- The suite compiles its kernels into a temporary cache folder (``ARROWDEV_CACHE_DIR``, made before the
  test workers start, shared by them and by the processes tests start, removed at the end), never into the
  user's ``~/.cache/arrowdev``: every run compiles from nothing, as CI does.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import shutil
import tempfile

import pytest

import arrowdev as ad


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


GPU = _gpu_available()
# numba-cuda installs the package numba_cuda (numba.cuda is redirected to it); numba's own numba.cuda is
# the deprecated built-in target, which arrowdev does not support.
NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
NEEDS_NUMBA_CUDA = "needs numba-cuda to compile for the CUDA target: pip install -e '.[test,kernels]'"


def pytest_configure(config):
    """A temporary kernel cache for the whole run, made by the process that starts the workers (they and
    every process a test starts inherit the variable)."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller made it
        return
    folder = tempfile.mkdtemp(prefix="arrowdev-test-kernels-")
    config.stash[_CACHE_KEY] = (folder, os.environ.get("ARROWDEV_CACHE_DIR"))
    os.environ["ARROWDEV_CACHE_DIR"] = folder


def pytest_unconfigure(config):
    folder, before = config.stash.get(_CACHE_KEY, (None, None))
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
    if before is None:
        os.environ.pop("ARROWDEV_CACHE_DIR", None)
    else:
        os.environ["ARROWDEV_CACHE_DIR"] = before


_CACHE_KEY = pytest.StashKey[tuple]()


def needs_numba_cuda(item: pytest.Item) -> bool:
    """A non-GPU test function that compiles for the CUDA target: marked, or named so."""
    if "gpu" in item.keywords or not isinstance(item, pytest.Function):
        return False
    name = item.originalname
    return "numba_cuda" in item.keywords or "cuda" in name or ("compile" in name and "without_a_gpu" in name)


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    skip_kernels = pytest.mark.skip(reason=NEEDS_NUMBA_CUDA)
    for item in items:
        if "gpu" in item.keywords and not GPU:
            item.add_marker(skip_gpu)
        elif needs_numba_cuda(item):
            item.add_marker(pytest.mark.numba_cuda)
            if not NUMBA_CUDA:
                item.add_marker(skip_kernels)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI only GPU tests may skip: any other skip becomes a failure that says why it skipped."""
    outcome = yield
    report = outcome.get_result()
    if CI and report.skipped and not hasattr(report, "wasxfail") and "gpu" not in item.keywords:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where only GPU tests may skip: {reason}"


@pytest.fixture
def general_calls(monkeypatch):
    """How many chunks went through a UDF call's general path (udf/run/execute.run_plan) since the fixture
    started: tests of prepared calls (CPU and GPU) count the calls that were not prepared."""
    from arrowdev.udf.run import execute

    calls = []
    run_plan = execute.run_plan

    def counted(*args, **kwargs):
        calls.append(1)
        return run_plan(*args, **kwargs)
    monkeypatch.setattr("arrowdev.udf.run.apply.run_plan", counted)
    return calls


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


HOLD_STREAM = os.environ.get("ARROWDEV_TEST_HOLD_STREAM", "")  # "", "legacy" or "arrowdev"


@pytest.fixture(autouse=True)
def _stream_held_for_gpu_tests(request):
    """With ``ARROWDEV_TEST_HOLD_STREAM=legacy`` (or ``arrowdev``), every GPU test starts behind ~0.1 s of a spinning
    kernel on CUDA's legacy stream (or arrowdev's stream of GPU 0): work that arrowdev queues on a stream other
    than the one its readers wait on then runs in the wrong order every time, where otherwise it did once in
    many runs (docs/device.md, "Sync events": the AND of a row-wise UDF's bitmaps on the legacy stream)."""
    if HOLD_STREAM not in ("legacy", "arrowdev") or "gpu" not in request.keywords:
        yield
        return
    import cupy

    from arrowdev.gpu import runtime
    from support.slow_write import slow_write

    stream = cupy.cuda.Stream.null if HOLD_STREAM == "legacy" else runtime.stream_for(0)
    slow_write(cupy, cupy.empty(1, dtype=cupy.int64), stream)
    yield


@pytest.fixture(autouse=True)
def _gpu_tests_do_not_leak(request):
    """Every GPU test runs inside ad.debug.leak_check(): containers, exports, device and pinned
    buffers must balance (NRT too, when NRT statistics are on)."""
    if "gpu" not in request.keywords:
        yield
        return
    with ad.debug.leak_check():
        yield
