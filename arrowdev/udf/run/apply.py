"""Running UDFs over columns: aligned input chunks in, one kernel launch per chunk, an Arrow column out.

The jobs live apart: :mod:`.inputs` (an input chunk as the kernel reads it), :mod:`.memory` (views, new
buffers and launches on the target), :mod:`.plan` (what a UDF over given input kinds compiles to, kept),
:mod:`.execute` (one chunk's launch), :mod:`.output` (one chunk's output over its life), :mod:`.validity`
(the output's validity bitmap).
"""

from __future__ import annotations

from typing import Any, Callable

from ...core import chunks as _chunked
from ...gpu import runtime
from ...errors import CaptureError
from ...core.types import DataType, Device
from . import segments as chunks, prepared_calls, prepared_host
from .. import deps
from ..compile import probe
from .callables import as_udf
from .execute import run_plan
from .inputs import Input
from .buffers import Memory
from .plan import plan_for, string_output_type
from ..spec import UDF, KernelSpec, NullMode, Target
from ..compile.arrow_types import input_kind, output_types

__all__ = ["apply_columns", "run_chunk"]


def run_chunk(f: Callable | UDF, inputs: list[Input], device: Device, null_aware: bool, out_type: DataType | None,
              stream: Any = None, window: tuple[int, int, bool] | None = None,
              string_type: str = "string") -> tuple[DataType, Any]:
    """Applies ``f`` to one aligned set of input chunks; returns (output type, held output)."""
    target = Target.CUDA if device.type in ("cuda", "cuda_managed") else Target.CPU
    plan = plan_for(f, inputs, target, null_aware, out_type, window, string_type)
    return run_plan(plan, inputs, Memory(device, stream))


def _refuse_if_captured(f: Callable, columns: list[Any], null_aware: bool, wanted: DataType | None,
                        string_type: str, repeatable: bool) -> None:
    """CaptureError where ``ad.cuda.capture()`` is recording on the columns' GPU: only prepared calls
    (no host work between kernels) can be captured, and this call is not one."""
    device = _chunked.device(columns[0])
    if device.type not in ("cuda", "cuda_managed") or not runtime.capturing(device.id):
        return
    why = ("it names a stream or is a rolling window" if not repeatable
           else prepared_calls.why_not_prepared(f, columns, null_aware, wanted, string_type))
    raise CaptureError(f"this UDF call cannot be captured on device {device.id}: {why}")


def apply_columns(f: Callable, columns: list[Any], null_aware: bool = False, out_type: Any = None,
                  stream: Any = None, window: tuple[int, int, bool] | None = None,
                  string_type: str = "string") -> tuple[DataType, list[Any]]:
    """``f`` applied row by row over equally long columns on one device: the result's type and chunks (the
    user objects wrap them: this layer makes no column)."""
    # math.sqrt, np.sqrt, abs: called from a Python function of as many arguments (run/callables.py)
    f = UDF(as_udf(f, 1 if window else len(columns)))  # its keys, computed once for the whole call
    wanted = None if out_type is None else DataType.from_arrow(out_type)
    repeatable = stream is None and window is None  # calls on arrowdev's stream, not rolling windows
    if repeatable:  # a layout called before: little host work (CPU: prepared_host.py, GPU: prepared_calls.py)
        result = (prepared_host.call_prepared(f, columns, null_aware, wanted, string_type)
                  or prepared_calls.call_prepared(f, columns, null_aware, wanted, string_type))
        if result is not None:
            return result
    if runtime.captures:
        _refuse_if_captured(f, columns, null_aware, wanted, string_type, repeatable)
    device = _chunked.device(columns[0])
    deps.require_compiler(Target.CUDA if device.type in ("cuda", "cuda_managed") else Target.CPU)
    rows = _chunked.length(columns[0])
    for col in columns[1:]:
        if _chunked.length(col) != rows:
            raise ValueError(f"expected every column to have {rows} rows, got {_chunked.length(col)} in "
                             f"{_chunked.dtype(col).name!r}")
    if len({(c.device_type, c.device_id) for col in columns for c in _chunked.chunks(col)}) > 1:
        raise ValueError(f"expected columns on one device, got {sorted({_chunked.device(c) for c in columns})}")
    segments = chunks.aligned_segments([chunks.of(c) for c in columns])
    outputs, out_dtype = [], None
    for segment in segments:
        inputs = [Input(dtype, held, nulls) for dtype, held, nulls in segment]
        out_dtype, held = run_chunk(f, inputs, device, null_aware, wanted, stream, window, string_type)
        outputs.append(held)
    if repeatable and device.type in ("cuda", "cuda_managed") and len(segments) == 1:
        prepared_calls.prepare(f, columns, null_aware, wanted, string_type)
    elif repeatable and device.type == "cpu" and len(segments) == 1:
        prepared_host.prepare(f, columns, null_aware, wanted, string_type)
    if out_dtype is None:  # no chunks: the output type still comes from the UDF's typing
        inputs_spec = tuple((input_kind(c.type), False) for c in columns)
        target = Target.CUDA if device.type in ("cuda", "cuda_managed") else Target.CPU
        win = window or (0, 0, False)
        result = probe.udf_result_type(f, KernelSpec(inputs_spec, NullMode.NONE, None, target, *win))
        string_out = string_output_type(result, wanted, string_type)
        if string_out:
            import pyarrow as pa

            out_dtype = DataType.from_arrow(getattr(pa, string_out)())
        else:
            out_dtype = output_types(result, wanted)[0]
    return out_dtype, outputs
