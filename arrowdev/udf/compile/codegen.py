"""The Python source of UDF kernels, generated per :class:`~.spec.KernelSpec` (numba compiles it).

A kernel takes ``(n, pad, out, out_valid, arena, d0, v0, o0, e0, d1, ...)``: for input k its data
buffer, validity bitmap, offset and extra (string data addresses), Arrow buffers read in place, bool data
as bits; it writes row i of the result to ``out[pad + i]``. Null modes:

- ``none``: no input has nulls; every row is computed.
- ``propagate``: a row with a null input is skipped (its output validity is made outside).
- ``aware``: a nullable input is passed as ``Optional[T]`` (``ad.NA`` where null); the result may
  be ``ad.NA``; the kernel writes ``out_valid[i]`` (one byte per row).

Numerics follow NumPy's error model on both targets: float division by zero gives inf or nan,
integer division by zero gives 0. A UDF that raises is refused on the GPU (numba-cuda does not
report exceptions from kernels) and raises on the CPU.
"""

from __future__ import annotations

import numpy as np

from ..spec import Kind, KernelSpec, NullMode, Target

__all__ = ["BALLOT_ROWS", "half_to_float", "kernel_source"]


def half_to_float(bits):
    """The value of IEEE half-precision ``bits`` (exact in float32): how CPU kernels read float16."""
    sign = -1.0 if (bits >> 15) & 1 else 1.0
    exponent, mantissa = (bits >> 10) & 0x1F, bits & 0x3FF
    if exponent == 0:
        return sign * mantissa * 5.9604644775390625e-08  # subnormal: mantissa * 2**-24
    if exponent == 31:
        return sign * np.inf if mantissa == 0 else np.nan
    return sign * (1.0 + mantissa / 1024.0) * 2.0 ** (exponent - 15)


def _load(k: int, dtype: Kind, target: Target = Target.CUDA, name: str = "", streaming: bool = False) -> str:
    """Source that reads row i of input k into x{k} (or ``name``). Strings become views of the column's
    bytes: offsets d{k} and data address e{k}; or 16-byte views d{k} (as int32 x 4) with e{k} holding the
    views' address and then the variadic buffers' addresses (inline strings of <= 12 bytes sit in the
    view). ``streaming`` (CUDA): plain numbers are read with streaming loads (see _STREAMED)."""
    x = name or f"x{k}"
    if dtype in _STREAMED and streaming:
        return f"{x} = load_streaming(d{k}, o{k} + i)"
    if dtype == Kind.BITS:
        return f"{x} = ((d{k}[(o{k} + i) >> 3] >> ((o{k} + i) & 7)) & 1) != 0"
    if dtype in (Kind.UTF8_32, Kind.UTF8_64):
        return (f"{x} = make_view(e{k} + d{k}[o{k} + i], d{k}[o{k} + i + 1] - d{k}[o{k} + i])")
    if dtype == Kind.FLOAT16 and target == Target.CPU:  # d{k} holds the uint16 bits
        return f"{x} = np.float32(half_to_float(d{k}[o{k} + i]))"
    if dtype == Kind.UTF8_VIEW:
        return (f"j{k} = 4 * (o{k} + i); n{k} = d{k}[j{k}]; "
                f"{x} = make_view(e{k}[0] + 4 * j{k} + 4, n{k}) if n{k} <= 12 else "
                f"make_view(e{k}[1 + d{k}[j{k} + 2]] + d{k}[j{k} + 3], n{k})")
    return f"{x} = d{k}[o{k} + i]"


def _valid(k: int, row: str = "i") -> str:
    return f"((v{k}[(o{k} + {row}) >> 3] >> ((o{k} + {row}) & 7)) & 1)"


def _store(out: Kind | None) -> tuple[str, list[str]]:
    """(statement storing result ``r`` of row i, statements marking row i empty) for an output kind."""
    if out == Kind.UTF8_PAIRS:  # address and size per row; a gather pass makes the Arrow buffers
        return "store_pair(out, i, r)", ["out[2 * i] = 0", "out[2 * i + 1] = 0"]
    if out == Kind.UTF8_VIEW:  # the 16-byte view itself, bytes in the arena or inline
        return "store_view(out, i, r)", ["out[4 * i] = 0", "out[4 * i + 1] = 0", "out[4 * i + 2] = 0",
                                         "out[4 * i + 3] = 0"]
    return "out[pad + i] = r", []


def kernel_source(spec: KernelSpec) -> str:
    """The Python source of the kernel for ``spec`` (numba compiles it for the target)."""
    params = ", ".join(f"d{k}, v{k}, o{k}, e{k}" for k in range(len(spec.inputs)))
    # CPU: a loop; CUDA: one row per thread (a grid-stride loop measured slower: docs/udf.md)
    rows = "    for i in range(n):" if spec.target == Target.CPU else "    i = cuda.grid(1)\n    if i < n:"
    lines = [f"def kernel(n, pad, out, out_valid, arena, {params}):", rows]
    if spec.window:
        return _rolling_source(spec, lines)
    nullable = [k for k, (_, has_validity) in enumerate(spec.inputs) if has_validity]
    body = [_load(k, dtype, spec.target) for k, (dtype, _) in enumerate(spec.inputs)]
    call = "udf(" + ", ".join(f"a{k}" if k in nullable and spec.null_mode == NullMode.AWARE else f"x{k}"
                              for k in range(len(spec.inputs))) + ")"
    start = ["begin_row(arena)"] if spec.arena else []
    store, empty = _store(spec.out)
    valid = "0 if row_failed() else 1" if spec.arena else "1"
    guard = " and ".join(_valid(k) for k in nullable) if spec.null_mode == NullMode.PROPAGATE else ""
    if spec.null_mode == NullMode.AWARE:
        body += [f"a{k} = x{k} if {_valid(k)} else None" for k in nullable]
        body += [*start, f"r = {call}", "if r is None:", "    out_valid[i] = 0", *_indent(empty), "else:",
                 f"    {store}", f"    out_valid[i] = {valid}"]
    elif spec.flags:
        computed = [*start, f"r = {call}", store, f"out_valid[i] = {valid}"]
        body += ([f"if {guard}:", *_indent(computed), "else:", "    out_valid[i] = 0", *_indent(empty)] if guard
                 else computed)
    elif spec.out == Kind.BALLOT:
        return _ballot_source(spec, lines[0], nullable)
    elif guard:
        body += [f"if {guard}:", *_indent(start), f"    out[pad + i] = {call}"]
    else:
        body += [*start, f"out[pad + i] = {call}"]
    if spec.target == Target.CPU:
        lines, body = _cpu_rows_from_zero(lines, body, spec)
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


def _cpu_rows_from_zero(lines: list[str], body: list[str], spec: KernelSpec) -> tuple[list[str], list[str]]:
    """A CPU loop that reads numbers (and strings' offsets) as ``s{k}[i]`` from views starting at the inputs'
    offsets and writes ``res[i]`` (a view of ``out`` from ``pad``): an index of the loop itself is known not to
    be negative, so numba leaves out the check for negative indices that ``d{k}[o{k} + i]`` needs in every row,
    and LLVM can vectorize the loop (7x at 10^6 float64 rows, ``x * 2 + 1 if x > 0.5 else x - 1``; 3-10% for
    string UDFs: docs/hosts.md)."""
    views = []
    for k, (dtype, _) in enumerate(spec.inputs):
        plain = f"x{k} = d{k}[o{k} + i]"
        if plain in body:
            body = [f"x{k} = s{k}[i]" if line == plain else line for line in body]
            views.append(f"    s{k} = d{k}[o{k}:]")
        elif dtype in (Kind.UTF8_32, Kind.UTF8_64):  # a string's offsets, this row's and the next
            body = [line.replace(f"d{k}[o{k} + i + 1]", f"s{k}[i + 1]").replace(f"d{k}[o{k} + i]", f"s{k}[i]")
                    if line.startswith(f"x{k} = ") else line for line in body]
            views.append(f"    s{k} = d{k}[o{k}:]")
    if any("out[pad + i]" in line for line in body):
        body = [line.replace("out[pad + i]", "res[i]") for line in body]
        views.append("    res = out[pad:]")
    return [lines[0], *views, *lines[1:]], body


# Rows per thread in a ballot kernel: its loads are issued together, so more bytes are in flight per
# thread (a read-only kernel is otherwise latency-bound). 4 was the fastest measured
# (benchmarks/probes/ballot_rows_per_thread.py; the figures are in docs/udf.md).
BALLOT_ROWS = 4
# Element types a ballot kernel reads with ld.global.cs (loads.py: evict-first, the data is read once;
# docs/udf.md has what it gained). Bits, strings, bytes and float16 keep ordinary loads.
_STREAMED = frozenset({Kind.INT16, Kind.INT32, Kind.INT64, Kind.UINT16, Kind.UINT32, Kind.UINT64, Kind.FLOAT32,
                       Kind.FLOAT64})


def _ballot_source(spec: KernelSpec, header: str, nullable: list[int]) -> str:
    """A CUDA kernel writing a bool result as bits: each warp votes on 32 consecutive rows at a time
    (a ballot makes them one uint32 word, written by lane 0; rows start at bit 0) and covers
    BALLOT_ROWS such words. All of a warp's loads come first, at row indices clamped to the column, so
    they are in flight together; rows past the end and null rows vote False. The launch gives each
    thread BALLOT_ROWS rows (``Memory.launch``)."""
    lines = [header, "    t = cuda.grid(1)", f"    first = (t >> 5) * {32 * BALLOT_ROWS}",
             "    if first < n:  # the same for the whole warp, which votes together", "        first += t & 31"]
    body: list[str] = []
    for q in range(BALLOT_ROWS):
        body.append(f"i = min(first + {32 * q}, n - 1)")
        body += [_load(k, dtype, Target.CUDA, f"x{k}_{q}", streaming=True) for k, (dtype, _) in enumerate(spec.inputs)]
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
    scratch = (f"buf = cuda.local.array({spec.window}, np.{_numba_name(dtype)})" if spec.target == Target.CUDA
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
    # on the GPU the window is typed WindowArray, whose methods are arrowdev's (window_methods.py)
    window = "as_window(buf[:count])" if spec.target == Target.CUDA else "buf[:count]"
    body += [f"if count >= {max(spec.min_periods, 1)}:", f"    out[pad + i] = udf({window})",
             "    out_valid[i] = 1", "else:", "    out_valid[i] = 0"]
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


def _numba_name(dtype: Kind) -> str:
    return "bool_" if dtype == Kind.BITS else np.dtype(dtype).name
