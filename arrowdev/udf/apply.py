"""Running numeric UDFs over columns: buffers in, kernel launch, an Arrow column out.

Inputs are read in place (data, validity and offset of each chunk). The output of each chunk is
one new data buffer (arrowdev's pool on a GPU, NumPy memory on the CPU) and a validity bitmap:

- no input nulls: none;
- one nullable input, nulls propagating: the input's own bitmap, shared (zero-copy): the output
  is laid out with the input's bit position (``offset % 8``) so the same bits line up;
- several nullable inputs: the AND of their bitmaps; null-aware UDFs: the kernel's per-row
  flags, packed to bits.

On a GPU every launch waits on the inputs' sync events and the output carries an event recorded
after the kernel, like every other arrowdev device array.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import _capsules
from ..types import DataType, Device
from . import codegen, deps, kernels, probe
from .spec import Kind, KernelSpec, NullMode, Target, function_key
from .launch import DeviceView, launch
from .types import element_dtype, input_kind, output_types

_STAND_INS: dict[tuple, Any] = {}


class _Input:
    """One input chunk as the kernel sees it."""

    def __init__(self, dtype: DataType, held: Any, null_count: int) -> None:
        self.held, self.null_count = held, null_count
        self.kind = input_kind(dtype)
        self.np_dtype = self.kind.numpy  # None for bits and strings
        self.has_validity = null_count > 0 and bool(held.buffers[0])

    def kernel_args(self, mem: _Memory, n: int) -> list[Any]:
        """(data, validity, offset, extra) as the kernel takes them (see codegen._load)."""
        held, offset = self.held, self.held.offset
        extra: Any = np.int64(0)
        if self.kind in (Kind.UTF8_32, Kind.UTF8_64):
            data = mem.view(held.buffers[1], offset + n + 1, np.int32 if self.kind == Kind.UTF8_32 else np.int64, held)
            extra = np.int64(held.buffers[2])
        elif self.kind == Kind.UTF8_VIEW:
            data = mem.view(held.buffers[1], 4 * (offset + n), np.int32, held)
            extra = mem.constant_array(np.array([held.buffers[1], *held.buffers[2:-1]], dtype=np.int64))
        elif self.np_dtype is None:
            data = mem.view(held.buffers[1], (offset + n + 7) // 8, np.uint8, held)
        else:  # float16 on the CPU: its bits (the kernel widens them, numba's CPU target has no float16)
            dtype = np.uint16 if self.np_dtype == np.float16 and not mem.gpu else self.np_dtype
            data = mem.view(held.buffers[1], offset + n, dtype, held)
        validity = held.buffers[0] if self.has_validity else 0
        return [data, mem.view(validity, (offset + n + 7) // 8 if validity else 1, np.uint8, held), np.int64(offset),
                extra]


class _Memory:
    """Array views and new buffers on the target (CPU: NumPy; CUDA: numba device arrays over
    arrowdev's pool)."""

    def __init__(self, device: Device, stream: Any = None) -> None:
        self.device = device
        self.gpu = device.type in ("cuda", "cuda_managed")
        if self.gpu:
            from ..cuda import runtime

            self.cp = runtime.cupy()
            self.stream = runtime.stream_for(device.id, stream)

    def view(self, address: int, count: int, dtype: np.dtype, owner: Any) -> Any:
        if not address:  # a NULL buffer (no validity, or an empty array): a stand-in the kernel never reads
            return self.stand_in(dtype)
        if self.gpu:
            return DeviceView(address, count, dtype, owner)
        raw = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(address)
        return np.frombuffer(raw, dtype=dtype)

    def constant_array(self, values: np.ndarray) -> Any:
        """A small array of ``values`` on this device (string_view buffer addresses)."""
        if not self.gpu:
            return values
        with self.cp.cuda.Device(self.device.id), self.stream:
            on_device = self.cp.asarray(values)
        return self.view(on_device.data.ptr, len(values), values.dtype, on_device)

    def stand_in(self, dtype: np.dtype) -> Any:
        """A one-element array of ``dtype`` on this device, made once."""
        key = (self.device, np.dtype(dtype).str)
        if key not in _STAND_INS:  # outside arrowdev's accounting: it lives as long as the process
            if self.gpu:
                with self.cp.cuda.Device(self.device.id):
                    backing = self.cp.zeros(8, dtype=dtype)
                _STAND_INS[key] = self.view(backing.data.ptr, 8, dtype, backing)
            else:
                _STAND_INS[key] = np.zeros(8, dtype=dtype)
        return _STAND_INS[key]

    def new(self, count: int, dtype: np.dtype) -> tuple[Any, int, Any]:
        """(kernel array, address, keep-alive) of a new buffer of ``count`` elements."""
        nbytes = count * np.dtype(dtype).itemsize
        if self.gpu:
            from ..cuda.memory import DeviceBuffer

            buf = DeviceBuffer(nbytes, self.device.id, self.stream)
            return self.view(buf.ptr, count, dtype, buf), buf.ptr, buf
        array = np.empty(max(count, 1), dtype=dtype)
        return array, array.ctypes.data, array

    def launch(self, kernel: Any, n: int, args: list[Any], rows_per_thread: int = 1) -> None:
        if self.gpu:
            launch(kernel, n, args, self.stream.ptr, self.device.id, rows_per_thread)
        else:
            kernel(n, *args)

    def pack_bits(self, flags: Any, count: int, count_ones: bool) -> tuple[int, Any, int]:
        """(address, keep-alive, set bits) of the bitmap packing ``flags`` (one byte per row, any non-zero
        byte is a 1). Set bits are counted on the CPU only, when asked: on a GPU counting would
        synchronise, so -1 is returned and the count is made from the bitmap when someone asks for it."""
        if self.gpu:
            with self.cp.cuda.Device(self.device.id), self.stream:
                packed = self.cp.packbits(self.cp.asarray(flags)[:count], bitorder="little")
            return packed.data.ptr, packed, -1
        array = np.asarray(flags[:count])
        packed = np.packbits(array, bitorder="little")
        return packed.ctypes.data, packed, int(np.count_nonzero(array)) if count_ones else 0

    def unpack_validity(self, held: Any, count: int) -> Any:
        """One byte per row (1 = valid) of a chunk's validity."""
        first, end = held.offset // 8, (held.offset + count + 7) // 8
        bits = self.view(held.buffers[0] + first, end - first, np.uint8, held)
        start = held.offset - 8 * first
        if self.gpu:
            with self.cp.cuda.Device(self.device.id), self.stream:
                return self.cp.unpackbits(self.cp.asarray(bits), bitorder="little")[start:start + count]
        return np.unpackbits(np.asarray(bits), bitorder="little")[start:start + count]


@dataclass(frozen=True)
class _Plan:
    """What one UDF over inputs of given kinds compiles to: the kernel and its output types."""

    spec: KernelSpec
    kernel: Any
    arrow_out: DataType | None  # None: a string type, fixed after the launch
    out_np: np.dtype | None  # None: bool (bits) or strings
    string_out: str | None
    allocates: bool


_plans: dict[tuple, _Plan] = {}


def run_chunk(f: Callable, inputs: list[_Input], device: Device, null_aware: bool, out_type: DataType | None,
              stream: Any = None, window: tuple[int, int, bool] | None = None,
              string_type: str = "string") -> tuple[DataType, Any]:
    """Applies ``f`` to one aligned set of input chunks; returns (output type, held output)."""
    target = Target.CUDA if device.type in ("cuda", "cuda_managed") else Target.CPU
    nullable = [x for x in inputs if x.has_validity]
    mode = NullMode.AWARE if window or null_aware else (NullMode.PROPAGATE if nullable else NullMode.NONE)
    kinds = tuple((x.kind, x.has_validity) for x in inputs)
    misaligned = len(nullable) == 1 and nullable[0].held.offset % 8 != 0  # its bitmap cannot be shared by bits
    key = (function_key(f), kinds, mode, target, window, out_type, string_type, misaligned)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _plan(f, kinds, mode, target, window or (0, 0, False), out_type, string_type,
                                   misaligned)
    mem = _Memory(device, stream)
    return _run(plan, inputs, mem, inputs[0].held.length, nullable)


def _plan(f: Callable, kinds: tuple, mode: NullMode, target: Target, win: tuple[int, int, bool],
          out_type: DataType | None, string_type: str, misaligned: bool) -> _Plan:
    traits = probe.udf_traits(f, KernelSpec(kinds, mode, None, target, *win))
    string_out = string_output_type(traits.result, out_type, string_type)
    if string_out is not None:
        out_kind = Kind.UTF8_VIEW if string_out == "string_view" else Kind.UTF8_PAIRS
        spec = KernelSpec(kinds, mode, out_kind, target, *win, arena=True, flags=True)
        arrow_out, out_np = None, None
    else:
        arrow_out, out_np = output_types(traits.result, out_type)
        if target == Target.CPU and out_np is not None and out_np == np.float16:
            raise TypeError("expected an output type numba's CPU target can write, got float16: pass "
                            "out_type=pa.float32() (float16 outputs work on GPU columns)")
        shares_misaligned = mode == NullMode.PROPAGATE and misaligned and not traits.may_fail
        # GPU bool results as bits straight from the kernel (a warp ballot per word), when rows start at bit 0
        ballot = (target == Target.CUDA and out_np is None and mode != NullMode.AWARE and not traits.may_fail and not win[0]
                  and not shares_misaligned)
        out_kind = Kind.BALLOT if ballot else (Kind.BITS if out_np is None else Kind(out_np.str))
        spec = KernelSpec(kinds, mode, out_kind, target, *win, arena=traits.allocates or traits.may_fail,
                                  flags=traits.may_fail)
    return _Plan(spec, kernels.compile_kernel(f, spec), arrow_out, out_np, string_out, traits.allocates)


def string_output_type(result: Any, out_type: DataType | None, string_type: str) -> str | None:
    """'string', 'large_string' or 'string_view' when the UDF returns a string; None otherwise."""
    from numba.core import types

    from .strings.types import string_types

    if isinstance(result, types.Optional):
        result = result.type
    if not isinstance(result, string_types().stringlike):
        return None
    chosen = out_type.storage_id if out_type is not None else string_type
    if chosen not in ("string", "large_string", "string_view"):
        raise TypeError(f"expected string_type (or out_type) 'string', 'large_string' or 'string_view' for a UDF "
                        f"that returns strings, got {chosen!r}")
    return chosen


def _run(plan: _Plan, inputs: list[_Input], mem: _Memory, n: int, nullable: list[_Input]) -> tuple[DataType, Any]:
    """Launches one chunk's kernel (again, while its string arena overflows) and assembles its Arrow
    output."""
    from .strings import results

    spec, kernel, arrow_out, out_np, string_out = plan.spec, plan.kernel, plan.arrow_out, plan.out_np, plan.string_out
    device, mode = mem.device, spec.null_mode
    if mem.gpu:
        from ..cuda import runtime

        runtime.wait_on_events(mem.stream, [x.held.sync_event for x in inputs])
    share = mode == NullMode.PROPAGATE and len(nullable) == 1 and not spec.flags
    pad = nullable[0].held.offset % 8 if share else 0
    if spec.out == Kind.BALLOT:
        out, out_ptr, out_keep = mem.new((n + 31) // 32, np.uint32)
    elif string_out is None:
        out, out_ptr, out_keep = mem.new(pad + n, np.uint8 if out_np is None else out_np)
    elif spec.out == Kind.UTF8_VIEW:
        out, out_ptr, out_keep = mem.new(4 * n, np.int32)
    else:
        out, out_ptr, out_keep = mem.new(2 * n, np.int64)
    writes_flags = mode == NullMode.AWARE or spec.flags
    flags, _, flags_keep = mem.new(n, np.uint8) if writes_flags else (mem.stand_in(np.uint8), 0, None)
    input_args: list[Any] = []
    for x in inputs:
        input_args.extend(x.kernel_args(mem, n))

    def launch(arena: Any) -> None:
        mem.launch(kernel, n, [pad, out, flags, np.int64(arena.state_address if arena else 0), *input_args],
                   codegen.BALLOT_ROWS if spec.out == Kind.BALLOT else 1)

    arena = None
    if spec.arena:
        strings_in = sum(x.kind.is_string for x in inputs)
        arena = results.launch_with_arena((kernel, mem.device), launch, mem, n, 32 * n * max(strings_in, 1),
                                          plan.allocates or string_out == "string_view")
    else:
        launch(None)
    keep: list[Any] = []  # what the output array holds on to
    scratch: list[Any] = [[x.held for x in inputs], flags_keep]  # what the queued work reads, until it is done
    if string_out is not None:
        arrow_out, value_buffers = results.build_string_output(string_out, mem, n, out, out_keep, arena, keep,
                                                               scratch)
        offset = 0
    elif spec.out == Kind.BALLOT:  # the kernel wrote the bits
        keep.append(out_keep)
        scratch.append(arena)
        value_buffers, offset = [out_ptr], 0
    elif out_np is None:  # bool output: bytes -> bits; the bytes are scratch
        out_ptr, packed, _ = mem.pack_bits(out, pad + n, count_ones=False)
        keep.append(packed)
        scratch += [out_keep, arena]
        value_buffers, offset = [out_ptr], pad
    else:
        keep.append(out_keep)
        scratch.append(arena)
        value_buffers, offset = [out_ptr], pad
    validity, null_count = 0, 0
    if writes_flags:
        validity, packed, valid_rows = mem.pack_bits(flags, n, count_ones=True)
        keep.append(packed)
        null_count = n - valid_rows if valid_rows >= 0 else -1
    elif share:  # the output's validity is the input's bitmap: the output keeps that input alive
        source = nullable[0]
        validity, null_count = source.held.buffers[0] + source.held.offset // 8, source.null_count
        keep.append(source.held)
    elif nullable:
        combined = mem.unpack_validity(nullable[0].held, n)
        for x in nullable[1:]:
            combined = combined & mem.unpack_validity(x.held, n)
        validity, packed, valid_rows = mem.pack_bits(combined, n, count_ones=True)
        keep.append(packed)
        null_count = n - valid_rows if valid_rows >= 0 else -1
    event = None
    if mem.gpu:
        from ..cuda import memory, runtime

        event = runtime.SyncEvent(mem.stream, device.id)
        keep.append(event)
        memory.keep_until(event.event, scratch)
    held = _capsules.build(n, null_count, offset, [validity, *value_buffers], [], device_type=device.code,
                           device_id=device.id, keepalive=keep, sync_event=event.address if event else None)
    return arrow_out, held


def apply_columns(f: Callable, columns: list[Any], null_aware: bool = False, out_type: Any = None,
                  stream: Any = None, window: tuple[int, int, bool] | None = None,
                  string_type: str = "string") -> Any:
    """``f`` applied row by row over equally long columns on one device; a new column."""
    from ..column import ArrowColumn, struct_field
    from ..table import ArrowTable

    if not callable(f):
        raise TypeError(f"expected a function, got {type(f).__name__}")
    deps.require_compiler(Target.CUDA if columns[0].device.type in ("cuda", "cuda_managed") else Target.CPU)
    wanted = None if out_type is None else DataType.from_arrow(out_type)
    if len(columns) == 1:
        col = columns[0]
        segments = [[(col.type, chunk, col._chunk_null_count(i))] for i, chunk in enumerate(col._chunks)]
        device = col.device
    else:
        names = [f"c{i}" for i in range(len(columns))]
        table = ArrowTable([c.rename(n) for c, n in zip(columns, names)], len(columns[0]))
        struct = table._as_struct_column()
        aligned = [ArrowColumn(c.type, [struct_field(b, i) for b in struct._chunks]) for i, c in enumerate(columns)]
        segments = [[(c.type, c._chunks[j], c._chunk_null_count(j)) for c in aligned] for j in range(struct.num_chunks)]
        device = table.device
    outputs, out_dtype = [], None
    for segment in segments:
        inputs = [_Input(dtype, held, nulls) for dtype, held, nulls in segment]
        out_dtype, held = run_chunk(f, inputs, device, null_aware, wanted, stream, window, string_type)
        outputs.append(held)
    if out_dtype is None:  # no chunks: the output type still comes from the UDF's typing
        inputs_spec = tuple((input_kind(c.type), False) for c in columns)
        target = Target.CUDA if device.type in ("cuda", "cuda_managed") else Target.CPU
        result = probe.udf_result_type(f, KernelSpec(inputs_spec, NullMode.NONE, None, target, *(window or (0, 0, False))))
        string_out = string_output_type(result, wanted, string_type)
        if string_out:
            import pyarrow as pa

            out_dtype = DataType.from_arrow(getattr(pa, string_out)())
        else:
            out_dtype = output_types(result, wanted)[0]
    return ArrowColumn(out_dtype, outputs)
