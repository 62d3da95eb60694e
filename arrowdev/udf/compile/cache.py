"""Compiled UDF kernels kept on disk, so a new process does not compile a UDF it has compiled before.

numba's own ``cache=True`` cannot hold arrowdev's kernels: they are generated source, and numba keys its
cache on a source file (``RuntimeError: cannot cache function 'kernel': no locator available``), nor would
it notice a change in the UDF the kernel calls. arrowdev keys an entry on what the compiled code depends on:

- the UDF's code (bytecode, constants, names, nested functions), defaults and closure values, and the
  globals it reads where they are constants (numbers, strings, tuples, arrays, modules by name, other
  functions by their own key); a UDF reading anything else is compiled every time, as before;
- what the kernel is compiled for (:class:`~.spec.KernelSpec`: input types, null mode, output, target)
  and, from numba, the signature and the code generator's description (for CUDA: the compute capability);
- the versions of Python, numba, numba-cuda, llvmlite, arrowdev and a digest of arrowdev's UDF sources.

Entries are numba's own serialised compile results (what ``cache=True`` stores), handed to numba's
dispatchers through their cache hook (``load_overload`` / ``save_overload``). Each is one file, written
to a temporary name and renamed, so concurrent writers never leave a torn file; an entry that does not
load (corrupt, truncated, from an incompatible build) is deleted and compiled again.

The folder is ``kernels`` in ``$ARROWDEV_CACHE_DIR`` when set (an empty value turns the disk cache off),
else in ``$XDG_CACHE_HOME/arrowdev`` or ``~/.cache/arrowdev`` (:func:`cache_dir`); nothing prunes it, and
deleting it at any time is safe (docs/udf.md says how to clear and move it).

>>> from arrowdev.udf.compile import cache
>>> stats = cache.stats()
>>> sorted(stats)
['compiled', 'corrupt', 'loaded', 'stored']
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import platform
import sys
import threading
import types
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..spec import UDF

__all__ = ["KernelCache", "cache_dir", "count_compilation", "count_load", "entry_key", "fingerprint", "fixed_key", "load_entry",
           "stats", "store_entry"]

_lock = threading.Lock()
_stats = {"compiled": 0, "loaded": 0, "stored": 0, "corrupt": 0}


def stats() -> dict[str, int]:
    """Counts in this process: kernels and typing probes ``compiled``, ``loaded`` from disk, ``stored`` to
    disk, and entries found ``corrupt`` (deleted and compiled again)."""
    with _lock:
        return dict(_stats)


def _count(name: str) -> None:
    with _lock:
        _stats[name] += 1


def count_compilation() -> None:
    """Counts one compilation (a kernel, or a UDF's typing probe) in :func:`stats`."""
    _count("compiled")


def count_load() -> None:
    """Counts one entry read back from disk (a UDF's typing probe; kernels count their own) in :func:`stats`."""
    _count("loaded")


def cache_dir() -> Path | None:
    """The folder of cached kernels, or None when the disk cache is off (``ARROWDEV_CACHE_DIR=""``)."""
    configured = os.environ.get("ARROWDEV_CACHE_DIR")
    if configured is not None:
        return Path(configured) / "kernels" if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "arrowdev" / "kernels"


class _Uncacheable(Exception):
    """A value whose identity across processes is unknown: the UDF is not cached on disk."""


def fingerprint(f: Callable) -> str | None:
    """A digest of everything ``f``'s compiled code depends on (module docstring), the same in every
    process; None when ``f`` reads a value that has no such identity."""
    try:
        token = _function_token(f, set())
    except _Uncacheable:
        return None
    return hashlib.sha256(repr(token).encode()).hexdigest()


def _function_token(f: Any, seen: set[int]) -> tuple:
    if id(f) in seen:  # a function that calls itself (or a cycle of them)
        return ("recursive", f.__qualname__)
    seen = seen | {id(f)}
    code = f.__code__
    cells = tuple(_value_token(cell.cell_contents, seen) for cell in (f.__closure__ or ()))
    defaults = _value_token(f.__defaults__, seen)
    read = sorted(name for name in _names(code) if name in f.__globals__)
    global_values = tuple((name, _value_token(f.__globals__[name], seen)) for name in read)
    return ("function", _code_token(code), defaults, cells, global_values)


def _names(code: types.CodeType) -> set[str]:
    """Global (and attribute) names the code and the functions it defines mention."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _code_token(code: types.CodeType) -> tuple:
    consts = tuple(_code_token(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            getattr(code, "co_qualname", code.co_name), code.co_filename, code.co_firstlineno)


def _value_token(value: Any, seen: set[int]) -> Any:
    """A description of ``value`` that is equal across processes exactly when the value is the same."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, repr(value))
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return (type(value).__name__, tuple(_value_token(v, seen) for v in items))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(np.ascontiguousarray(value)).hexdigest())
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, repr(value.item()))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    py_func = getattr(value, "py_func", None)  # a numba dispatcher: what matters is the function it compiles
    if isinstance(py_func, types.FunctionType):
        return ("jitted", type(value).__name__, _function_token(py_func, seen))
    if isinstance(value, types.FunctionType):
        return _function_token(value, seen)
    if isinstance(value, (types.BuiltinFunctionType, type, np.ufunc)):
        return ("named", getattr(value, "__module__", None), getattr(value, "__qualname__", value.__name__))
    from ..na import NAType

    if isinstance(value, NAType):
        return ("NA",)
    raise _Uncacheable(type(value).__qualname__)


@functools.lru_cache(maxsize=None)
def environment() -> str:
    """The versions and sources a compiled kernel depends on besides the UDF and its inputs."""
    from importlib import metadata

    def version(distribution: str) -> str | None:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None

    from ..._version import __version__

    sources = hashlib.sha256()
    root = Path(__file__).parents[1]  # udf/: everything compiled code or a fixed kernel's source comes from
    for path in sorted(root.rglob("*.py")):
        sources.update(path.relative_to(root).as_posix().encode())
        sources.update(path.read_bytes())
    return repr((sys.version, platform.machine(), version("numba"), version("numba-cuda"), version("llvmlite"),
                 __version__, sources.hexdigest()))


def entry_key(udf: UDF, what: Any) -> str | None:
    """The key of an entry for ``udf`` compiled as ``what`` (a KernelSpec or a typing probe's key);
    None when the UDF cannot be cached on disk. Its fingerprint is computed once per call (kept on ``udf``)."""
    if not udf.has_digest:
        udf.digest, udf.has_digest = fingerprint(udf.f), True
    digest = udf.digest
    if digest is None:
        return None
    return hashlib.sha256(repr((digest, what, environment())).encode()).hexdigest()


def fixed_key(what: Any) -> str:
    """The key of an entry for a kernel that is the same for every UDF (``what`` names it)."""
    return hashlib.sha256(repr((what, environment())).encode()).hexdigest()


def _path(key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / key[:2] / f"{key}.pkl"


def load_entry(key: str | None) -> Any:
    """The object stored under ``key``, or None (absent, cache off, or corrupt: then deleted)."""
    path = _path(key) if key else None
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # torn, truncated or foreign bytes: compile again
        _discard(path)
        return None


def _discard(path: Path) -> None:
    _count("corrupt")
    try:
        path.unlink()
    except OSError:
        pass


def store_entry(key: str | None, value: Any, dumps: Callable[[Any], bytes] = pickle.dumps) -> bool:
    """Writes ``value`` under ``key`` (temporary file, then rename); False when it could not be written
    (cache off, read-only folder, a value that does not serialise)."""
    path = _path(key) if key else None
    if path is None:
        return False
    try:
        data = dumps(value)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{uuid.uuid4().hex[:12]}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except Exception:  # the kernel still works: it is only not kept
        return False
    _count("stored")
    return True


class KernelCache:
    """numba's dispatcher cache hook for one kernel (``dispatcher._cache``): ``load_overload`` is asked
    before numba compiles a signature, ``save_overload`` after. ``key`` None: nothing on disk, compilations
    still counted."""

    cache_path = ""

    def __init__(self, key: str | None, target: str) -> None:
        self.key, self.target = key, target

    def _entry(self, sig: Any, codegen: Any) -> str | None:
        if self.key is None:
            return None
        nrt = None  # CUDA: whether numba-cuda's runtime was on (it changes the code; the CPU's is always on)
        if self.target == "cuda":
            from numba.cuda import config

            nrt = bool(getattr(config, "CUDA_ENABLE_NRT", False))
        return hashlib.sha256(repr((self.key, str(sig), codegen.magic_tuple(), nrt)).encode()).hexdigest()

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        key = self._entry(sig, target_context.codegen())
        payload = load_entry(key)
        if payload is None:
            return None
        try:
            if self.target == "cuda":
                from numba.cuda.dispatcher import _Kernel

                result = _Kernel._rebuild(**payload)
            else:
                from numba.core import compiler

                target_context.refresh()
                result = compiler.CompileResult._rebuild(target_context, *payload)
        except Exception:  # an entry numba cannot rebuild: compile again
            if os.environ.get("ARROWDEV_CACHE_DEBUG"):
                raise
            path = _path(key) if key else None
            if path is not None:
                _discard(path)
            return None
        _count("loaded")
        return result

    def save_overload(self, sig: Any, data: Any) -> None:
        count_compilation()
        if self.key is None:
            return
        if self.target == "cuda":
            from numba.cuda.serialize import dumps

            store_entry(self._entry(sig, data.codegen), data._reduce_states(), dumps)
        elif not (data.objectmode or data.lifted or data.library.has_dynamic_globals):
            from numba.core.serialize import dumps

            store_entry(self._entry(sig, data.codegen), data._reduce(), dumps)

    def flush(self) -> None:
        """Nothing to flush: entries are files of their own."""
