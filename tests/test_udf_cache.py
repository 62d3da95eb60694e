"""Compiled UDF kernels on disk: a second process loads what the first compiled; the key follows the UDF's
code, closure and constant globals; a corrupt entry is compiled again, not crashed on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from arrowdev.udf.compile import cache

SCRIPT = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    import arrowdev as ad
    from arrowdev.udf.compile import cache

    SCALE = 3


    def scaled(offset):
        return lambda x: x * SCALE + offset


    offset = float(sys.argv[1])
    numbers = ad.column(pa.array([1.0, None, 3.0]))
    words = ad.column(pa.array(["ab", None, "été"]))
    out = {"numeric": numbers.apply(scaled(offset)).to_pylist()}
    if sys.argv[2] == "all":
        out["aware"] = numbers.apply(lambda x: -1.0 if x is ad.NA else x, null_aware=True).to_pylist()
        out["string"] = words.apply(lambda s: s.upper() + "!").to_pylist()
        out["rolling"] = numbers.rolling(2, min_periods=1).apply(lambda w: w.sum()).to_pylist()
    out["stats"] = cache.stats()
    print(json.dumps(out))
    """)
EXPECTED = {"aware": [1.0, -1.0, 3.0], "string": ["AB!", None, "ÉTÉ!"], "rolling": [1.0, 1.0, 3.0]}


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("udfs") / "udfs.py"
    path.write_text(SCRIPT)
    return path


def _env(cache_dir: Path | str) -> dict[str, str]:
    return {**os.environ, "ARROWDEV_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.pathsep.join(sys.path)}


def _check(stdout: str, offset: float, which: str) -> dict:
    out = json.loads(stdout.strip().splitlines()[-1])
    expected = {"numeric": [1.0 * 3 + offset, None, 3.0 * 3 + offset], **(EXPECTED if which == "all" else {})}
    assert {k: v for k, v in out.items() if k != "stats"} == expected
    return out["stats"]


def run(script: Path, cache_dir: Path | str, offset: float = 1.0, which: str = "all") -> dict:
    """Runs the UDFs in a fresh process; checks their results; returns its cache counts."""
    done = subprocess.run([sys.executable, str(script), str(offset), which], capture_output=True, text=True,
                          env=_env(cache_dir), timeout=600)
    assert done.returncode == 0, done.stderr
    return _check(done.stdout, offset, which)


@pytest.fixture(scope="module")
def filled(script, tmp_path_factory) -> tuple[Path, dict]:
    """A cache folder after one cold process (and that process's counts)."""
    folder = tmp_path_factory.mktemp("filled")
    return folder, run(script, folder)


@pytest.fixture
def warm(filled, tmp_path) -> Path:
    """A copy of the filled folder for one test to change."""
    folder = tmp_path / "cache"
    shutil.copytree(filled[0], folder)
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.pkl"))


def test_a_second_process_loads_every_kernel_from_disk(script, filled, warm):
    first = filled[1]
    assert first["compiled"] > 0 and first["loaded"] == 0 and first["stored"] > 0
    second = run(script, warm)
    assert second["compiled"] == 0, second  # not one compilation: typing probes and kernels come from disk
    assert second["loaded"] >= 5  # numeric, null-aware, string (and its gather), rolling kernels


def test_a_changed_closure_value_compiles_anew(script, warm):
    changed = run(script, warm, offset=2.5)
    assert changed["compiled"] == 2  # the numeric UDF's typing probe and kernel; the others load
    assert changed["loaded"] >= 4


def test_fingerprint_follows_code_closure_and_constant_globals():
    def make(k):
        return lambda x: x * k

    assert cache.fingerprint(make(2)) == cache.fingerprint(make(2))
    assert cache.fingerprint(make(2)) != cache.fingerprint(make(3))
    assert cache.fingerprint(make(2)) != cache.fingerprint(lambda x: x * 2)  # other code (and place)
    assert cache.fingerprint(make(np.arange(3))) != cache.fingerprint(make(np.arange(4)))
    assert cache.fingerprint(make(object())) is None  # no identity across processes: not cached on disk


LIMIT = 10


def test_fingerprint_follows_a_constant_global_the_udf_reads():
    def udf(x):
        return min(x, LIMIT)

    before = cache.fingerprint(udf)
    globals()["LIMIT"] = 11
    try:
        assert cache.fingerprint(udf) != before
    finally:
        globals()["LIMIT"] = 10
    assert cache.fingerprint(udf) == before


def test_a_udf_calling_another_function_follows_that_function():
    def make(k):
        def helper(x):
            return x + k

        return lambda x: helper(x) * 2

    assert cache.fingerprint(make(1)) != cache.fingerprint(make(2))


def test_a_corrupt_entry_is_compiled_again(script, warm):
    damages = [lambda data: b"not a pickle" * 10, lambda data: data[:len(data) // 2], lambda data: b""]
    damaged = entries(warm)
    for i, path in enumerate(damaged):  # garbage, truncated, empty, in turn
        path.write_bytes(damages[i % 3](path.read_bytes()))
    repaired = run(script, warm)
    assert repaired["corrupt"] == len(damaged) and repaired["compiled"] == len(damaged)
    again = run(script, warm)  # the recompiled entries were written back
    assert again["compiled"] == 0 and again["corrupt"] == 0


def test_an_empty_cache_dir_setting_turns_the_disk_cache_off(script):
    counts = run(script, "", which="numeric")
    assert counts["stored"] == 0 and counts["loaded"] == 0 and counts["compiled"] == 2


def test_concurrent_first_processes_share_one_folder(script, tmp_path):
    folder = tmp_path / "cache"
    children = [subprocess.Popen([sys.executable, str(script), "1.0", "numeric"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=_env(folder)) for _ in range(2)]
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        _check(out, 1.0, "numeric")
    assert not list(folder.rglob("*.tmp"))  # every write was renamed into place
    assert run(script, folder, which="numeric")["compiled"] == 0


GPU_SCRIPT = textwrap.dedent("""
    import json
    import pyarrow as pa
    import arrowdev as ad
    from arrowdev.udf.compile import cache

    numbers = ad.column(pa.array([1.0, None, 3.0])).to_device()
    words = ad.column(pa.array(["ab", None, "été"])).to_device()
    # several columns chunked differently, so one kernel runs over several aligned pieces
    tbl = ad.table({"a": pa.chunked_array([[1, -2, 3], [4, None, -6, 7]]),
                    "b": pa.chunked_array([[10, 20], [30, 40, 50, None, 70]])}).to_device()
    strs = ad.table({"a": pa.array(["ann", "bob", None, "x"]),
                     "b": pa.array(["ann", "bo", "x", None], pa.string_view())}).to_device()
    out = {
        "numeric": numbers.apply(lambda x: x * 3 + 1).to_pylist(),
        "ballot": numbers.apply(lambda x: x > 2).to_pylist(),
        "aware": numbers.apply(lambda x: -1.0 if x is ad.NA else x, null_aware=True).to_pylist(),
        "string": words.apply(lambda s: s.upper() + "!").to_pylist(),
        "view": words.apply(lambda s: s + s, string_type="string_view").to_pylist(),
        "rows": tbl.apply(lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).to_pylist(),
        "equal": strs.apply(lambda a, b: a == b, columns=["a", "b"]).to_pylist(),
        "stats": cache.stats(),
    }
    print(json.dumps(out))
    """)


@pytest.mark.gpu
def test_a_second_process_gets_right_gpu_results_with_a_warm_cache(tmp_path):
    """Plain, ballot, null-aware, managed-string (NRT) and row-wise kernels over differently chunked columns:
    the second process, with the first one's cache folder, loads every kernel and typing probe from disk,
    compiles nothing, and gets the same right results."""
    script = tmp_path / "gpu_udfs.py"
    script.write_text(GPU_SCRIPT)
    expected = {"numeric": [4.0, None, 10.0], "ballot": [False, None, True], "aware": [1.0, -1.0, 3.0],
                "string": ["AB!", None, "ÉTÉ!"], "view": ["abab", None, "étéété"],
                "rows": [10, 20, 90, 160, None, None, 490], "equal": [True, False, None, None]}
    counts = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=_env(tmp_path / "cache"), timeout=600)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        counts.append(out.pop("stats"))
        assert out == expected
    assert counts[0]["compiled"] > 0 and counts[0]["stored"] > 0
    assert counts[1]["loaded"] >= counts[0]["stored"] and counts[1]["compiled"] == 0, counts


def test_the_suite_compiles_into_a_temporary_cache_not_the_users():
    """tests/conftest.py points ARROWDEV_CACHE_DIR at a folder of its own for the run (pytest-xdist's workers
    and the processes tests start share it); the user's ~/.cache/arrowdev is never written by the tests."""
    import tempfile

    folder = cache.cache_dir()
    assert folder is not None and folder.parent.name.startswith("arrowdev-test-kernels-")
    assert folder.is_relative_to(tempfile.gettempdir())
    home = Path(os.path.expanduser("~")) / ".cache" / "arrowdev"
    assert not folder.is_relative_to(home)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run([sys.executable, "-c", "from arrowdev.udf.compile import cache; print(cache.cache_dir())"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert child.stdout.strip() == str(folder)
