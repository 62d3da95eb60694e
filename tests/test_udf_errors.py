"""Errors that say the fix: a missing compiler names the extra to install; CUDA-layer failures are
DeviceUnavailableError naming their cause. Missing packages are simulated for real, in a child process
whose import system refuses them."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
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
    assert 'pip install "arrowdev[udf]"' in child.stdout or '-e "' in child.stdout
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


@pytest.mark.parametrize("points_here", [True, False], ids=["editable install of this checkout", "elsewhere"])
def test_install_hints_name_the_checkout_or_both_forms(tmp_path, points_here):
    """From an editable install of this checkout (the README's quick start) the hint is the command for it;
    otherwise both forms (the package index's, and a checkout's: arrowdev is not on the index yet)."""
    import json
    import pathlib

    root = pathlib.Path(ad.__file__).resolve().parent.parent
    info = tmp_path / "arrowdev-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arrowdev\nVersion: 0.0.0\n")
    target = root if points_here else tmp_path
    (info / "direct_url.json").write_text(json.dumps({"url": target.as_uri(), "dir_info": {"editable": True}}))
    child = _run_child([], f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from arrowdev.errors import install_hint
        print(install_hint("udf"))
        """)
    assert child.returncode == 0, child.stderr
    if points_here:
        assert child.stdout.strip() == f'pip install -e "{root}[udf]" (this checkout, installed in editable mode)'
    else:
        assert child.stdout.strip() == ('pip install "arrowdev[udf]", or from a checkout of arrowdev: '
                                        'pip install -e ".[udf]"')


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


# ---- errors that say what is unsupported, in the UDF author's terms, at the UDF's own line -------------

INTS = pa.array([1, 2, 3])
FLOATS = pa.array([1.5, 4.0])
STRINGS = pa.array(["a", "bc"])


def _fstring(x):
    return f"v={x}!"


def _string_plus_one(s):
    return s + 1


def _str_of_float(x):
    return str(x)


def _a_dict(x):
    return {"a": x}


def _a_dict_of_numbers(x):
    return {x: 1}


def _none_sometimes(x):
    return None if x > 1 else x


def _na_sometimes(x):
    return ad.NA if x > 1 else x


@pytest.mark.parametrize("data,f,match", [
    (STRINGS, _fstring, r"return f\"v=\{x\}!\"`: f-strings are not supported in UDFs: build the string with \+ and str\(\)"),
    (INTS, _fstring, "f-strings are not supported"),
    (STRINGS, _string_plus_one, r"return s \+ 1`: `\+` on a string and an integer is not supported: a string is "
                                r"added only to a string: convert the other value first, str\(n\)"),
    (FLOATS, _str_of_float, r"return str\(x\)`: `str\(\)` on a float is not supported: str\(\) converts integers "
                            "and strings in a UDF, not floats"),
    (INTS, _a_dict, r"return \{\"a\": x\}`: dicts are not supported in UDFs: a UDF returns one value per row"),
    (INTS, _a_dict_of_numbers, r"returns a dict at line \d+: `return \{x: 1\}`; a UDF returns one value per row"),
], ids=["fstring of a string", "fstring of an int", "string plus int", "str of float", "dict of strings",
        "dict of ints"])
def test_unsupported_constructs_are_said_in_the_user_s_terms_at_the_user_s_line(data, f, match):
    with pytest.raises(ad.UDFCompileError) as info:
        ad.column(data).apply(f)
    text = str(info.value)
    assert "\n" not in text and not text.rstrip().endswith(":") and "found for signature" not in text
    assert re.search(match, text), text
    assert f"UDF {f.__qualname__!r} ({__file__}:" in text  # the user's UDF, file and line, never numba's


@pytest.mark.parametrize("f", [_none_sometimes, _na_sometimes])
def test_returning_na_without_null_aware_names_the_udf_and_null_aware(f):
    col = ad.column(INTS)
    with pytest.raises(ad.UDFCompileError, match=rf"UDF {f.__qualname__!r} .* returns None or ad.NA for some rows "
                                                 r"at line \d+: `return .* if x > 1 else x`: pass null_aware=True"):
        col.apply(f)
    assert col.apply(f, null_aware=True).to_pylist() == [1, None, None]


def test_an_out_type_that_does_not_fit_the_result_is_blamed():
    with pytest.raises(TypeError, match=r"out_type=string does not fit what UDF .* returns \(int64\): for a UDF "
                                        "that returns numbers or bools, pass a numeric, bool or temporal out_type"):
        ad.column(INTS).apply(lambda x: x + 1, out_type=pa.string())


@pytest.mark.parametrize("f,data,expected", [
    (math.sqrt, FLOATS, [math.sqrt(v) for v in FLOATS.to_pylist()]),
    (abs, pa.array([-1, 2]), [1, 2]),
    (np.sqrt, FLOATS, [math.sqrt(v) for v in FLOATS.to_pylist()]),
    (float, INTS, [1.0, 2.0, 3.0]),
    (math.floor, FLOATS, [1, 4]),
], ids=["math.sqrt", "abs", "np.sqrt", "float", "math.floor"])
def test_builtins_and_c_functions_work_as_udfs(f, data, expected):
    col = ad.column(data)
    assert col.apply(f).to_pylist() == expected == [f(v) for v in data.to_pylist()]
    assert col.apply(f).to_pylist() == col.apply(lambda x: f(x)).to_pylist()


def test_builtins_take_as_many_columns_as_the_table_gives():
    tbl = ad.table({"a": pa.array([3.0, 5.0]), "b": pa.array([4.0, 12.0])})
    assert tbl.apply(math.hypot).to_pylist() == [5.0, 13.0] and tbl.apply(max).to_pylist() == [4.0, 12.0]
    assert ad.column(FLOATS).rolling(2, 1).apply(np.max).to_pylist() == [1.5, 4.0]


def test_callables_numba_cannot_call_are_refused_by_name():
    class Scale:
        def __call__(self, x):
            return x * 2

    with pytest.raises(ad.UDFCompileError, match=r"cannot compile UDF .*Scale' \(a callable that is not a Python "
                                                 r"function.*\): numba cannot call it from compiled code"):
        ad.column(INTS).apply(Scale())
    with pytest.raises(TypeError, match="expected a function, got int"):
        ad.column(INTS).apply(5)
