"""Kernels for numeric UDFs: source generated per signature, compiled by numba (CPU target) or
numba-cuda (CUDA target), cached per (function, closure, input types, null mode, output, target).

A kernel takes ``(n, pad, out, out_valid, d0, v0, o0, d1, v1, o1, ...)``: for input k its data
buffer, validity bitmap and offset (Arrow buffers read in place, bool data as bits), and writes
row i of the result to ``out[pad + i]``. Null modes:

- ``none``: no input has nulls; every row is computed.
- ``propagate``: a row with a null input is skipped (its output validity is made outside).
- ``aware``: a nullable input is passed as ``Optional[T]`` (``ad.NA`` where null); the result may
  be ``ad.NA``; the kernel writes ``out_valid[i]`` (one byte per row).

Numerics follow NumPy's error model on both targets: float division by zero gives inf or nan,
integer division by zero gives 0. A UDF that raises is refused on the GPU (numba-cuda does not
report exceptions from kernels) and raises on the CPU.
"""

from __future__ import annotations

import contextlib
import dis
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import ArrowDevError, DeviceUnavailableError
from . import cache, deps, loads, na
from .constant_sets import with_constant_sets
from .strings import intrinsics as string_intrinsics
from .strings import with_string_constants

__all__ = ["UDFCompileError", "KernelSpec", "compile_kernel", "udf_result_type"]

_lock = threading.Lock()
_nrt_lock = threading.RLock()
NRT_KERNELS: set[Any] = set()  # CUDA kernels compiled with numba-cuda's runtime on
_cache: dict[tuple, Any] = {}
_result_cache: dict[tuple, Any] = {}
CI_COMPUTE_CAPABILITY = (9, 0)  # for compile_ptx where no GPU says which to use


class UDFCompileError(ArrowDevError, TypeError):
    """A UDF numba cannot compile: names the UDF, the line and the construct."""


@dataclass(frozen=True)
class KernelSpec:
    """What a kernel is compiled for. ``inputs``: per input (NumPy dtype string or 'bits',
    has validity); ``out``: NumPy dtype string or 'bits'; ``window``: rolling window size or 0."""

    inputs: tuple[tuple[str, bool], ...]
    null_mode: str
    out: str
    target: str
    window: int = 0
    min_periods: int = 0
    center: bool = False
    arena: bool = False  # the UDF makes strings (or may fail a row): each row starts with begin_row
    flags: bool = False  # the kernel writes out_valid for every row (string outputs, rows that may fail)


@dataclass(frozen=True)
class UDFTraits:
    """What typing and lowering found out about a UDF: its result type, whether it allocates managed
    strings (needs an arena) and whether a row may fail (``int("x")``: the row becomes null)."""

    result: Any
    allocates: bool
    may_fail: bool


def function_key(f: Callable) -> tuple:
    """Identity of a UDF for caching: its code, defaults and closure values (by value when
    hashable, else by identity)."""
    cells = []
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
            hash(value)
            cells.append(value)
        except (ValueError, TypeError):
            cells.append(id(cell))
    return (f.__code__, f.__defaults__, tuple(cells))


def _describe(f: Callable) -> str:
    code = f.__code__
    return f"UDF {f.__qualname__!r} ({code.co_filename}:{code.co_firstlineno})"


_NUMBA_NOISE = re.compile(r"\x1b\[[0-9;]*m")


def _friendly(f: Callable, error: Exception) -> UDFCompileError:
    """A short error from a numba failure: the UDF, the line numba points at, and the first line of
    the reason (numba's full message is kept as the cause)."""
    text = _NUMBA_NOISE.sub("", str(error))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    reason = next((ln for ln in lines if not ln.startswith(("Failed in", "During:", "File", ">>>", "-", "There are"))),
                  type(error).__name__)
    where = re.findall(r'File "([^"]+)", line (\d+)', text)
    loc = getattr(error, "loc", None)
    if not where and getattr(loc, "line", None):
        where = [(loc.filename, str(loc.line))]
    source_line = ""
    if where:
        filename, line = where[-1]
        idx = next((i for i, ln in enumerate(lines) if ln.startswith(f'File "{filename}", line {line}')), None)
        if idx is not None and idx + 2 < len(lines):
            source_line = f": `{lines[idx + 2]}`"
        location = f"line {line}{source_line}"
    else:
        location = "its body"
    return UDFCompileError(f"cannot compile {_describe(f)}: at {location}: {reason}")


def _raises(f: Callable) -> bool:
    return any(ins.opname == "RAISE_VARARGS" for ins in dis.get_instructions(f))


def _numba_args(spec: KernelSpec) -> tuple:
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    args = []
    for dtype, has_validity in spec.inputs:
        if dtype.startswith("utf8"):
            string_intrinsics()[spec.target]  # the string types' typing and lowering, registered once
            base = _string_view()
        elif dtype == "<f2" and spec.target == "cpu":
            base = types.float32  # numba's CPU target has no float16: the kernel widens the bits exactly
        else:
            base = types.boolean if dtype == "bits" else from_dtype(np.dtype(dtype))
        args.append(types.optional(base) if spec.null_mode == "aware" and has_validity else base)
    if spec.window:
        return (types.Array(args[0] if not isinstance(args[0], types.Optional) else args[0].type, 1, "C"),)
    return tuple(args)


def _string_view() -> Any:
    from .strings.types import string_types

    return string_types().string_view


def prepared(f: Callable, target: str = "cpu") -> Callable:
    """The UDF as numba compiles it: constant number sets and string literals swapped for typed
    constants (:mod:`.constant_sets`, :mod:`.strings.literals`); same meaning in plain Python."""
    return with_string_constants(with_constant_sets(f, target))


def udf_result_type(f: Callable, spec: KernelSpec) -> Any:
    """The numba type the UDF returns for these inputs (see :func:`udf_traits`)."""
    return udf_traits(f, spec).result


def udf_traits(f: Callable, spec: KernelSpec) -> UDFTraits:
    """The UDF's result type and what its code needs, from the target's own typing and lowering. For
    CUDA this is ``numba.cuda.compile_ptx(..., device=True)``: it types and lowers the UDF without a
    GPU, so CI catches what the CUDA target cannot compile. Allocation and row failure are read off
    the compiled code: they reference the arena state or the row-failure flags (strings/managed.py)."""
    deps.require_compiler(spec.target)
    na.register_numba_typing(spec.target)
    string_intrinsics()[spec.target]  # string types and literals: registered with the target once
    key = (function_key(f), spec.inputs, spec.null_mode, spec.target, spec.window)
    with _lock:
        if key in _result_cache:
            return _result_cache[key]
    if spec.target == "cuda" and _raises(f):
        raise UDFCompileError(f"cannot compile {_describe(f)}: `raise` is not supported on the GPU "
                              "(numba-cuda does not report exceptions from kernels); return ad.NA instead")
    args = _numba_args(spec)
    disk_key = cache.entry_key(f, ("traits", *key[1:]))
    traits = _decode_traits(cache.load_entry(disk_key))
    if traits is None:
        traits = _probe(f, spec, args)
        cache.store_entry(disk_key, _encode_traits(traits))
    with _lock:
        _result_cache[key] = traits
    return traits


def _probe(f: Callable, spec: KernelSpec, args: tuple) -> UDFTraits:
    """Compiles the UDF alone for the target (see :func:`udf_traits`)."""
    cache.count_compilation()
    compiled = prepared(f, spec.target)
    try:
        if spec.target == "cuda":
            from numba import cuda

            code, result = cuda.compile_ptx(compiled, args, device=True, cc=_compute_capability())
        else:
            import numba

            jitted = numba.njit(error_model="numpy")(compiled)
            jitted.compile(args)
            result = jitted.overloads[args].signature.return_type
            code = jitted.overloads[args].library.get_llvm_str()
    except Exception as e:  # numba's TypingError, UnsupportedError, LoweringError, ...
        if _toolkit_missing(e):
            raise DeviceUnavailableError(f"numba-cuda cannot compile for the GPU here: {type(e).__name__}: {e} "
                                         f"(the CUDA toolkit's NVVM and libdevice come with {deps.CUDA_EXTRA})") from e
        if type(e).__module__.startswith(("numba", "numba_cuda")) or "numba" in type(e).__module__:
            raise _friendly(f, e) from e
        raise
    return UDFTraits(result, "arrowdev_arena_state" in code, "arrowdev_row_failed" in code)


def _encode_traits(traits: UDFTraits) -> tuple | None:
    """Traits as plain values for the disk cache (the string types are classes made at run time, which
    pickle cannot name); None for a result type that is not kept."""
    from numba.core import types

    from .strings.types import string_types

    result = traits.result
    optional = isinstance(result, types.Optional)
    base = result.type if optional else result
    if isinstance(base, string_types().stringlike):
        name = "string"
    elif isinstance(base, (types.Boolean, types.Integer, types.Float)):
        name = str(base)
    else:
        return None
    return ("traits-v1", name, optional, traits.allocates, traits.may_fail)


def _decode_traits(entry: Any) -> UDFTraits | None:
    if not (isinstance(entry, tuple) and len(entry) == 5 and entry[0] == "traits-v1"):
        return None
    from numba.core import types

    from .strings.types import string_types

    _, name, optional, allocates, may_fail = entry
    base = string_types().managed_string if name == "string" else types.boolean if name == "bool" else \
        getattr(types, name)
    return UDFTraits(types.optional(base) if optional else base, allocates, may_fail)


def _toolkit_missing(error: Exception) -> bool:
    """True for numba-cuda's errors that say a CUDA library was not found (NVVM, NVRTC, the driver;
    cuda.pathfinder's DynamicLibNotFoundError), not that the UDF is wrong."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"NvvmSupportError", "NvrtcSupportError", "CudaSupportError", "DynamicLibNotFoundError"})


def _compute_capability() -> tuple[int, int]:
    try:
        from ..cuda import runtime

        cp = runtime.cupy()
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return (props["major"], props["minor"])
    except Exception:
        return CI_COMPUTE_CAPABILITY


def half_to_float(bits):
    """The value of IEEE half-precision ``bits`` (exact in float32): how CPU kernels read float16."""
    sign = -1.0 if (bits >> 15) & 1 else 1.0
    exponent, mantissa = (bits >> 10) & 0x1F, bits & 0x3FF
    if exponent == 0:
        return sign * mantissa * 5.9604644775390625e-08  # subnormal: mantissa * 2**-24
    if exponent == 31:
        return sign * np.inf if mantissa == 0 else np.nan
    return sign * (1.0 + mantissa / 1024.0) * 2.0 ** (exponent - 15)


def _load(k: int, dtype: str, target: str = "cuda", name: str = "") -> str:
    """Source that reads row i of input k into x{k} (or ``name``). Strings become views of the column's
    bytes: offsets d{k} and data address e{k}; or 16-byte views d{k} (as int32 x 4) with e{k} holding the
    views' address and then the variadic buffers' addresses (inline strings of <= 12 bytes sit in the
    view). Target "cuda_streaming" reads plain numbers with streaming loads (see _STREAMED)."""
    x = name or f"x{k}"
    if dtype in _STREAMED and target == "cuda_streaming":
        return f"{x} = load_streaming(d{k}, o{k} + i)"
    if dtype == "bits":
        return f"{x} = ((d{k}[(o{k} + i) >> 3] >> ((o{k} + i) & 7)) & 1) != 0"
    if dtype in ("utf8_32", "utf8_64"):
        return (f"{x} = make_view(e{k} + d{k}[o{k} + i], d{k}[o{k} + i + 1] - d{k}[o{k} + i])")
    if dtype == "<f2" and target == "cpu":  # d{k} holds the uint16 bits
        return f"{x} = np.float32(half_to_float(d{k}[o{k} + i]))"
    if dtype == "utf8_view":
        return (f"j{k} = 4 * (o{k} + i); n{k} = d{k}[j{k}]; "
                f"{x} = make_view(e{k}[0] + 4 * j{k} + 4, n{k}) if n{k} <= 12 else "
                f"make_view(e{k}[1 + d{k}[j{k} + 2]] + d{k}[j{k} + 3], n{k})")
    return f"{x} = d{k}[o{k} + i]"


def _valid(k: int, row: str = "i") -> str:
    return f"((v{k}[(o{k} + {row}) >> 3] >> ((o{k} + {row}) & 7)) & 1)"


def _store(out: str) -> tuple[str, list[str]]:
    """(statement storing result ``r`` of row i, statements marking row i empty) for an output kind."""
    if out == "utf8_pairs":  # address and size per row; a gather pass makes the Arrow buffers
        return "store_pair(out, i, r)", ["out[2 * i] = 0", "out[2 * i + 1] = 0"]
    if out == "utf8_view":  # the 16-byte view itself, bytes in the arena or inline
        return "store_view(out, i, r)", ["out[4 * i] = 0", "out[4 * i + 1] = 0", "out[4 * i + 2] = 0",
                                         "out[4 * i + 3] = 0"]
    return "out[pad + i] = r", []


def kernel_source(spec: KernelSpec) -> str:
    """The Python source of the kernel for ``spec`` (numba compiles it for the target)."""
    params = ", ".join(f"d{k}, v{k}, o{k}, e{k}" for k in range(len(spec.inputs)))
    # CPU: a loop; CUDA: one row per thread (a grid-stride loop measured 28% slower on an H200)
    rows = "    for i in range(n):" if spec.target == "cpu" else "    i = cuda.grid(1)\n    if i < n:"
    lines = [f"def kernel(n, pad, out, out_valid, arena, {params}):", rows]
    if spec.window:
        return _rolling_source(spec, lines)
    nullable = [k for k, (_, has_validity) in enumerate(spec.inputs) if has_validity]
    body = [_load(k, dtype, spec.target) for k, (dtype, _) in enumerate(spec.inputs)]
    call = "udf(" + ", ".join(f"a{k}" if k in nullable and spec.null_mode == "aware" else f"x{k}"
                              for k in range(len(spec.inputs))) + ")"
    start = ["begin_row(arena)"] if spec.arena else []
    store, empty = _store(spec.out)
    valid = "0 if row_failed() else 1" if spec.arena else "1"
    guard = " and ".join(_valid(k) for k in nullable) if spec.null_mode == "propagate" else ""
    if spec.null_mode == "aware":
        body += [f"a{k} = x{k} if {_valid(k)} else None" for k in nullable]
        body += [*start, f"r = {call}", "if r is None:", "    out_valid[i] = 0", *_indent(empty), "else:",
                 f"    {store}", f"    out_valid[i] = {valid}"]
    elif spec.flags:
        computed = [*start, f"r = {call}", store, f"out_valid[i] = {valid}"]
        body += ([f"if {guard}:", *_indent(computed), "else:", "    out_valid[i] = 0", *_indent(empty)] if guard
                 else computed)
    elif spec.out == "ballot":
        return _ballot_source(spec, lines[0], nullable)
    elif guard:
        body += [f"if {guard}:", *_indent(start), f"    out[pad + i] = {call}"]
    else:
        body += [*start, f"out[pad + i] = {call}"]
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


# Rows per thread in a ballot kernel: its loads are issued together, so more bytes are in flight per
# thread (a read-only kernel is otherwise latency-bound). Measured on an H200 over 10^9 int64 rows,
# membership ran at 0.62 of copy bandwidth with 1 row per thread, 0.74 with 2 and 0.79 with 4
# (with streaming loads, below; benchmarks/probes/ballot_rows_per_thread.py). With plain loads 8 rows
# ran slower than 4 (0.73 against 0.77).
BALLOT_ROWS = 4
# Element types a ballot kernel reads with ld.global.cs (loads.py: evict-first, the data is read once);
# worth 0.05-0.07 of copy bandwidth there. Bits, strings, bytes and float16 keep ordinary loads.
_STREAMED = frozenset({"<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "<f4", "<f8"})


def _ballot_source(spec: KernelSpec, header: str, nullable: list[int]) -> str:
    """A CUDA kernel writing a bool result as bits: each warp votes on 32 consecutive rows at a time
    (a ballot makes them one uint32 word, written by lane 0; rows start at bit 0) and covers
    BALLOT_ROWS such words. All of a warp's loads come first, at row indices clamped to the column, so
    they are in flight together; rows past the end and null rows vote False. The launch gives each
    thread BALLOT_ROWS rows (``_Memory.launch``)."""
    lines = [header, "    t = cuda.grid(1)", f"    first = (t >> 5) * {32 * BALLOT_ROWS}",
             "    if first < n:  # the same for the whole warp, which votes together", "        first += t & 31"]
    body: list[str] = []
    for q in range(BALLOT_ROWS):
        body.append(f"i = min(first + {32 * q}, n - 1)")
        body += [_load(k, dtype, "cuda_streaming", f"x{k}_{q}") for k, (dtype, _) in enumerate(spec.inputs)]
    for q in range(BALLOT_ROWS):
        row = f"first + {32 * q}"
        guard = " and ".join([f"{row} < n", *(_valid(k, row) for k in nullable)])
        call = "udf(" + ", ".join(f"x{k}_{q}" for k in range(len(spec.inputs))) + ")"
        body += ["r = False", f"if {guard}:", *(["    begin_row(arena)"] if spec.arena else []), f"    r = {call}",
                 "w = cuda.ballot_sync(0xFFFFFFFF, r)",
                 f"if cuda.laneid == 0 and {row} < n:", f"    out[({row}) >> 5] = w"]
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


def _indent(statements: list[str]) -> list[str]:
    return ["    " + statement for statement in statements]


def _rolling_source(spec: KernelSpec, lines: list[str]) -> str:
    """Row i's window is rows [i - before, i + after]; its valid values are gathered into a
    buffer (nulls skipped, as pandas does) and the UDF gets the filled part when it holds at least
    ``min_periods`` values; otherwise the row is null."""
    dtype, has_validity = spec.inputs[0]
    before = spec.window // 2 if spec.center else spec.window - 1
    after = spec.window - 1 - before
    scratch = (f"buf = cuda.local.array({spec.window}, np.{_numba_name(dtype)})" if spec.target == "cuda"
               else f"buf = np.empty({spec.window}, np.{_numba_name(dtype)})")
    body = [
        scratch, "count = 0",
        f"for j in range(max(i - {before}, 0), min(i + {after} + 1, n)):",
        "    " + _load(0, dtype).replace("o0 + i", "o0 + j"),
    ]
    if has_validity:
        body += [f"    if {_valid(0).replace('o0 + i', 'o0 + j')}:", "        buf[count] = x0", "        count += 1"]
    else:
        body += ["    buf[count] = x0", "    count += 1"]
    body += [f"if count >= {max(spec.min_periods, 1)}:", "    out[pad + i] = udf(buf[:count])",
             "    out_valid[i] = 1", "else:", "    out_valid[i] = 0"]
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


def _numba_name(dtype: str) -> str:
    return "bool_" if dtype == "bits" else np.dtype(dtype).name


def compile_kernel(f: Callable, spec: KernelSpec) -> Any:
    """The compiled kernel (a numba dispatcher) for ``f`` and ``spec``, cached."""
    deps.require_compiler(spec.target)
    key = (function_key(f), spec)
    with _lock:
        if key in _cache:
            return _cache[key]
    udf_result_type(f, spec)  # friendly errors, and the GPU check for `raise`
    namespace: dict[str, Any] = {"np": np, **string_intrinsics()[spec.target]}
    if spec.target == "cuda":
        from numba import cuda

        namespace.update(cuda=cuda, udf=cuda.jit(device=True)(prepared(f, "cuda")), load_streaming=loads.cuda_intrinsic())
        kernel = cuda.jit(_exec(kernel_source(spec), namespace))
        if spec.arena:
            NRT_KERNELS.add(kernel)
    else:
        import numba

        namespace["udf"] = numba.njit(error_model="numpy")(prepared(f))
        namespace["half_to_float"] = numba.njit(half_to_float)
        kernel = numba.njit(error_model="numpy")(_exec(kernel_source(spec), namespace))
    # numba asks this hook before compiling a signature and hands it what it compiled (cache.py)
    kernel._cache = cache.KernelCache(cache.entry_key(f, ("kernel", spec)), spec.target)
    with _lock:
        _cache[key] = kernel
    return kernel


@contextlib.contextmanager
def cuda_nrt() -> Iterator[None]:
    """numba-cuda's runtime switched on while a kernel that makes managed strings compiles and links."""
    from numba.cuda import config

    with _nrt_lock:
        before = getattr(config, "CUDA_ENABLE_NRT", False)
        config.CUDA_ENABLE_NRT = True
        try:
            yield
        finally:
            config.CUDA_ENABLE_NRT = before


def _exec(source: str, namespace: dict[str, Any]) -> Callable:
    # an importable module name: numba records it in the compiled code's environment, and a kernel
    # loaded from the disk cache finds its environment again through it
    namespace.setdefault("__name__", __name__)
    exec(compile(source, "<arrowdev udf kernel>", "exec"), namespace)
    return namespace["kernel"]


def cache_size() -> int:
    """Compiled kernels held (a second call with the same UDF and input types adds none)."""
    return len(_cache)
