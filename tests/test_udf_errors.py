"""Errors that say the fix: a missing compiler names the extra to install; CUDA-layer failures are
DeviceUnavailableError naming their cause. Missing packages are simulated for real, in a child process
whose import system refuses them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.gpu import runtime

_BLOCKER = """
import sys
class _Blocker:
    def __init__(self, names):
        self.names = names
    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + ".") for n in self.names):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Blocker({blocked!r}))
"""


def _run_child(blocked: list[str], body: str) -> subprocess.CompletedProcess:
    source = _BLOCKER.replace("{blocked!r}", repr(blocked)) + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env, timeout=300)


def test_cpu_udf_without_numba_names_the_udf_extra():
    child = _run_child(["numba", "numba_cuda"], """
        import pyarrow as pa, arrowdev as ad
        try:
            ad.column(pa.array([1, 2])).apply(lambda x: x + 1)
        except ad.MissingDependencyError as e:
            assert isinstance(e, ImportError)
            print("RAISED:", e)
        """)
    assert child.returncode == 0, child.stderr
    assert 'pip install "arrowdev[udf]"' in child.stdout
    assert "numba" in child.stdout


def test_cpu_udf_with_numba_set_to_none_names_the_udf_extra():
    child = _run_child([], """
        import sys
        sys.modules["numba"] = None
        import pyarrow as pa, arrowdev as ad
        try:
            ad.column(pa.array([1.0])).rolling(1).apply(lambda w: w.sum())
        except ad.MissingDependencyError as e:
            print("RAISED:", e)
        """)
    assert child.returncode == 0, child.stderr
    assert 'RAISED:' in child.stdout and 'arrowdev[udf]' in child.stdout


def test_gpu_kernel_without_numba_cuda_names_the_cuda_extra():
    # CPU UDFs keep working without numba-cuda; compiling for the GPU names the extra
    child = _run_child(["numba_cuda", "numba.cuda"], """
        import pyarrow as pa, arrowdev as ad
        from arrowdev.udf.compile import kernels
        from arrowdev.udf.spec import KernelSpec
        assert ad.column(pa.array([1, 2])).apply(lambda x: x + 1).to_pylist() == [2, 3]
        spec = KernelSpec((("<i8", False),), "none", "<i8", "cuda")
        try:
            kernels.compile_kernel(lambda x: x + 1, spec)
        except ad.DeviceUnavailableError as e:
            print("RAISED:", e)
        """)
    assert child.returncode == 0, child.stderr
    assert 'RAISED:' in child.stdout and 'pip install "arrowdev[cuda13]"' in child.stdout


def _foreign_gpu_column() -> ad.ArrowColumn:
    """A column labelled as living on CUDA device 0, as a foreign producer hands it over (no memory is
    touched: every call below must fail before reading it)."""
    from arrowdev.core.types import DataType

    dtype = DataType.from_arrow(pa.int64())
    held = ad._capsules.build(dtype, 4, 0, 0, [0, 0x7F0000001000], [], device_type=2, device_id=0, keepalive=[])
    return ad.ArrowColumn(dtype, [held])


needs_no_gpu = pytest.mark.skipif(runtime.is_available(), reason="checks the machine without a usable GPU")


@needs_no_gpu
@pytest.mark.parametrize("call", [lambda c: c.export_ipc(), lambda c: c.to_host(),
                                  lambda c: c.apply(lambda x: x + 1)], ids=["export_ipc", "to_host", "apply"])
def test_gpu_calls_without_a_gpu_raise_device_unavailable(call):
    with pytest.raises(ad.DeviceUnavailableError) as info:
        call(_foreign_gpu_column())
    assert "arrowdev[cuda13]" in str(info.value) or "driver" in str(info.value) or "device" in str(info.value)


def _driver_loads() -> bool:
    try:
        runtime.driver()
    except ad.DeviceUnavailableError:
        return False
    return True


@pytest.mark.skipif(_driver_loads(), reason="checks a machine without an NVIDIA driver")
def test_driver_without_libcuda_names_the_cause():
    with pytest.raises(ad.DeviceUnavailableError, match="CUDA driver"):
        runtime.driver()
