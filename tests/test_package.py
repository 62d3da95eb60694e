"""The package as published: metadata, the sdist (built, unpacked and tested), the typed stub of the
native module, `mypy --strict` on the public modules, and the extras' dependency bounds."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest
from packaging.requirements import Requirement

import arrowdev

ROOT = pathlib.Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra brings tomli on Python 3.10
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _run(args: list[str], cwd: pathlib.Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **env})
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def _extra(name: str) -> dict[str, Requirement]:
    return {Requirement(r).name: Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][name]}


# ---- metadata ------------------------------------------------------------------------------------


def test_license_is_the_apache_2_text_and_an_spdx_expression():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    setuptools = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert not setuptools[0].specifier.contains("76.9")  # license expressions need setuptools >= 77


def test_classifiers_are_known_to_the_package_index():
    from trove_classifiers import classifiers

    listed = PYPROJECT["project"]["classifiers"]
    assert listed and not [c for c in listed if c not in classifiers]


def test_the_version_is_written_once():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "arrowdev._version.__version__"}
    assert arrowdev.__version__ == arrowdev._version.__version__
    written = [p for p in (ROOT / "arrowdev").glob("*.py") if "__version__ =" in p.read_text()]
    assert written == [ROOT / "arrowdev" / "_version.py"]


# ---- extras --------------------------------------------------------------------------------------


def test_the_test_extra_brings_no_gpu_wheels_and_ci_compiles_every_kernel():
    test = _extra("test")
    assert not {"numba-cuda", "cupy-cuda13x", "cuda-python", "cuda-core"} & set(test)
    assert "numba-cuda" in _extra("kernels")
    ci = (ROOT / ".ci" / "run").read_text()
    assert '".[test,kernels,docs]"' in ci


@pytest.mark.parametrize("extra", ["kernels", "cuda13"])
def test_the_kernel_compiler_is_bounded_above(extra):
    """udf/launch.py lays kernel arguments out as numba-cuda 0.30 does (private), udf/ builds on numba's
    internals: each has an upper bound that excludes the next minor release."""
    requirement = _extra(extra)["numba-cuda"]
    assert "cu13" in requirement.extras
    assert requirement.specifier.contains("0.30.4") and not requirement.specifier.contains("0.31.0")
    numba = _extra("udf")["numba"]
    assert numba.specifier.contains("0.68.1") and not numba.specifier.contains("0.69.0")


def test_the_gpu_extra_brings_the_launch_libraries():
    """udf/launch.py launches through cuda-python's driver API a kernel numba-cuda loaded with cuda.core."""
    source = (ROOT / "arrowdev" / "udf" / "run" / "launch.py").read_text()
    assert "cuLaunchKernel" in source and "runtime.driver()" in source and ".handle" in source
    assert "cuda-core" in _extra("cuda13") and "cuda-python" in _extra("cuda13")


# ---- typing --------------------------------------------------------------------------------------


def test_the_native_module_stub_matches_the_built_module():
    """mypy's stubtest imports arrowdev._capsules and checks every name, signature and class of the stub."""
    result = _run([sys.executable, "-m", "mypy.stubtest", "arrowdev._capsules", "--mypy-config-file",
                   str(ROOT / "pyproject.toml")], ROOT, PYTHONPATH=str(ROOT))
    assert "Success" in result.stdout


def test_public_modules_pass_mypy_strict():
    files = PYPROJECT["tool"]["mypy"]["files"]
    assert PYPROJECT["tool"]["mypy"]["strict"] is True
    assert {"arrowdev/column.py", "arrowdev/table.py", "arrowdev/core/types.py", "arrowdev/errors.py",
            "arrowdev/__init__.py"} <= set(files)
    result = _run([sys.executable, "-m", "mypy", "--cache-dir", os.devnull], ROOT)
    assert "Success: no issues found" in result.stdout


# ---- the sdist -----------------------------------------------------------------------------------


def _tracked_files() -> list[str]:
    """The files of this checkout that git knows or would add (tracked, or new and not ignored)."""
    result = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip("not a git checkout (this is an sdist): nothing to compare with")
    return [f for f in result.stdout.split() if (ROOT / f).is_file()]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> pathlib.Path:
    """The sdist built from a clean copy of this checkout (no build outputs, no egg-info whose
    SOURCES.txt setuptools would add to the sdist), with setuptools and no build isolation: fast and
    offline."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in _tracked_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(source)], source)
    (built,) = out.glob("arrowdev-*.tar.gz")
    return built


def test_the_sdist_holds_every_file_its_tests_and_docs_need(sdist):
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        metadata = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/PKG-INFO")))
        pkg_info = metadata.read().decode()
    needed = [f for f in _tracked_files()
              if f.split("/")[0] in ("arrowdev", "capsules", "tests", "docs", "examples", "benchmarks")
              or f in ("LICENSE", "README.md", "pyproject.toml", "setup.py", ".ci/run")]
    assert not [f for f in needed if f not in names]
    assert f"Version: {arrowdev.__version__}\n" in pkg_info
    assert "License-Expression: Apache-2.0\n" in pkg_info and "License-File: LICENSE\n" in pkg_info


def test_tests_run_from_the_unpacked_sdist(sdist, tmp_path):
    """The sdist, unpacked and built in place: its whole suite collects without errors, and a few of its
    tests pass there, importing arrowdev from the unpacked tree."""
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (tree,) = tmp_path.glob("arrowdev-*")
    _run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], tree)
    env = {"PYTHONPATH": str(tree)}
    where = _run([sys.executable, "-c", "import arrowdev; print(arrowdev.__file__)"], tmp_path, **env)
    assert where.stdout.strip() == str(tree / "arrowdev" / "__init__.py")
    collected = _run([sys.executable, "-m", "pytest", "-n", "0", "--collect-only", "-q"], tree, **env)
    assert " error" not in collected.stdout.splitlines()[-1], collected.stdout[-2000:]
    ran = _run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:randomly", "tests/test_examples.py",
                "tests/test_column.py", "-k", "test_examples or null_count or slice"], tree, **env)
    assert " passed" in ran.stdout and "failed" not in ran.stdout


# ---- the wheel -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(sdist, tmp_path_factory) -> pathlib.Path:
    """The manylinux wheel tools/build_wheels.sh makes from the unpacked sdist (the release's path: sdist, then
    wheel), without build isolation: offline."""
    tree, out = tmp_path_factory.mktemp("wheel-source"), tmp_path_factory.mktemp("wheels")
    with tarfile.open(sdist) as tar:
        tar.extractall(tree, filter="data")
    (source,) = tree.glob("arrowdev-*")
    _run(["bash", str(source / "tools" / "build_wheels.sh"), str(out)], source, PYTHON=sys.executable,
         BUILD_ARGS="--no-isolation")
    (built,) = out.glob("arrowdev-*.whl")
    return built


def test_the_wheel_is_manylinux_for_this_cpython(wheel):
    """auditwheel retags the linux_x86_64 wheel of `python -m build` as manylinux: the extension needs no
    library beyond what the manylinux policy allows, and no newer glibc symbol than its tag says."""
    python, abi, platform = wheel.name.removesuffix(".whl").split("-")[2:]
    assert python == abi == f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert "manylinux" in platform and "linux_x86_64" not in platform.split(".")
    shown = _run([sys.executable, "-m", "auditwheel", "show", str(wheel)], wheel.parent)
    assert "manylinux" in shown.stdout


def test_the_wheel_runs_the_example_from_a_fresh_virtual_environment(wheel, tmp_path):
    """The wheel installed alone into a new venv (its dependencies, PyArrow, nanoarrow and NumPy, seen from this
    environment's site-packages, whose arrowdev is not): examples/quickstart.py runs on the installed arrowdev."""
    import site
    import sysconfig

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--quiet",
          str(wheel)], tmp_path)
    fresh = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path)
    outer = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    # a path line adds the folder only (its own .pth files, among them arrowdev's editable install, are not run)
    (pathlib.Path(fresh.stdout.strip()) / "outer_dependencies.pth").write_text("\n".join(sorted(outer)) + "\n")
    shutil.copy(ROOT / "examples" / "quickstart.py", tmp_path / "quickstart.py")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    where = subprocess.run([str(python), "-c", "import arrowdev; print(arrowdev.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=120)
    assert where.returncode == 0, where.stderr
    assert pathlib.Path(where.stdout.strip()).is_relative_to(venv)
    ran = subprocess.run([str(python), "quickstart.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "held arrays left: 0 | exports not yet released: 0" in ran.stdout


# ---- what may skip -------------------------------------------------------------------------------


def test_in_ci_only_gpu_tests_may_skip(tmp_path):
    """tests/conftest.py: under CI=true a skipped non-GPU test (a missing extra, a numba-cuda test without
    numba-cuda) fails; a GPU test still skips. Outside CI both skip."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    multi_gpu: x\n    numba_cuda: x\n")
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n"
        "def test_missing_extra():\n    pytest.importorskip('no_such_module_anywhere')\n\n"
        "@pytest.mark.gpu\ndef test_on_a_gpu():\n    pass\n\n"
        "def test_runs():\n    pass\n")
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    in_ci = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env={**env, "CI": "true"})
    assert in_ci.returncode == 1, in_ci.stdout
    assert "skipped in CI, where only GPU tests may skip" in in_ci.stdout and "1 failed, 1 passed" in in_ci.stdout
    gpu_skipped = "1 skipped" in in_ci.stdout
    local = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env={**env, "CI": ""})
    assert local.returncode == 0 and "1 passed" in local.stdout, local.stdout
    import conftest

    assert gpu_skipped is not conftest.GPU  # the GPU test skips exactly when there is no GPU
    assert ("2 skipped" in local.stdout) is not conftest.GPU


def test_kernel_compiling_tests_are_marked_so_that_they_skip_only_outside_ci():
    import conftest

    result = _run([sys.executable, "-m", "pytest", "-n", "0", "--collect-only", "-q", "-m", "numba_cuda",
                   "tests/test_udf.py", "tests/test_string_udf.py", "tests/test_managed_strings.py"], ROOT,
                  PYTHONPATH=str(ROOT))
    marked = [line for line in result.stdout.splitlines() if "::" in line]
    assert any("test_whole_cuda_kernels_compile_without_a_gpu" in line for line in marked)
    assert any("test_cuda_typing_and_lowering_without_a_gpu" in line for line in marked)
    assert conftest.NUMBA_CUDA or not conftest.CI  # CI installs the kernels extra
