"""What one UDF over inputs of given kinds compiles to (:class:`Plan`: the kernel and its output types),
decided once per (UDF, input kinds, null mode, target, window, output type, bitmap alignment) and kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...core.types import DataType
from ..compile import kernels, probe
from .inputs import Input
from ..spec import UDF, Kind, KernelSpec, NullMode, Target
from ..compile.arrow_types import output_types
from ..compile.result_checks import check_result

__all__ = ["Plan", "plan_for", "string_output_type"]


@dataclass(frozen=True)
class Plan:
    """What one UDF over inputs of given kinds compiles to: the kernel and its output types."""

    spec: KernelSpec
    kernel: Any
    arrow_out: DataType | None  # None: a string type, fixed after the launch
    out_np: np.dtype | None  # None: bool (bits) or strings
    string_out: str | None
    allocates: bool


_plans: dict[tuple, Plan] = {}


def plan_for(f: Callable | UDF, inputs: list[Input], target: Target, null_aware: bool, out_type: DataType | None,
             window: tuple[int, int, bool] | None, string_type: str) -> Plan:
    """The plan for UDF ``f`` over these input chunks (made on first use, then kept)."""
    udf = UDF.of(f)
    nullable = [x for x in inputs if x.has_validity]
    mode = NullMode.AWARE if window or null_aware else (NullMode.PROPAGATE if nullable else NullMode.NONE)
    kinds = tuple((x.kind, x.has_validity) for x in inputs)
    misaligned = len(nullable) == 1 and nullable[0].held.offset % 8 != 0  # its bitmap cannot be shared by bits
    key = (udf.key, kinds, mode, target, window, out_type, string_type, misaligned)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _make(udf, kinds, mode, target, window or (0, 0, False), out_type, string_type,
                                   misaligned)
    return plan


def _make(udf: UDF, kinds: tuple, mode: NullMode, target: Target, win: tuple[int, int, bool],
          out_type: DataType | None, string_type: str, misaligned: bool) -> Plan:
    traits = probe.udf_traits(udf, KernelSpec(kinds, mode, None, target, *win))
    check_result(udf.f, traits.result, mode, out_type)
    string_out = string_output_type(traits.result, out_type, string_type)
    if string_out is not None:
        out_kind = Kind.UTF8_PAIRS  # every string type is built from (address, size) pairs (string_results)
        spec = KernelSpec(kinds, mode, out_kind, target, *win, arena=True, flags=True)
        arrow_out, out_np = None, None
    else:
        arrow_out, out_np = output_types(traits.result, out_type)
        if target == Target.CPU and out_np is not None and out_np == np.float16:
            raise TypeError("expected an output type numba's CPU target can write, got float16: pass "
                            "out_type=pa.float32() (float16 outputs work on GPU columns)")
        shares_misaligned = mode == NullMode.PROPAGATE and misaligned and not traits.may_fail
        # GPU bool results as bits straight from the kernel (a warp ballot per word), when rows start at bit 0
        ballot = (target == Target.CUDA and out_np is None and mode != NullMode.AWARE and not traits.may_fail
                  and not win[0] and not shares_misaligned)
        out_kind = Kind.BALLOT if ballot else (Kind.BITS if out_np is None else Kind(out_np.str))
        spec = KernelSpec(kinds, mode, out_kind, target, *win, arena=traits.allocates or traits.may_fail,
                          flags=traits.may_fail)
    return Plan(spec, kernels.compile_kernel(udf, spec), arrow_out, out_np, string_out, traits.allocates)


def string_output_type(result: Any, out_type: DataType | None, string_type: str) -> str | None:
    """'string', 'large_string' or 'string_view' when the UDF returns a string; None otherwise."""
    from numba.core import types

    from ..compile.strings.numba_types import string_types

    if isinstance(result, types.Optional):
        result = result.type
    if not isinstance(result, string_types().stringlike):
        return None
    chosen = out_type.storage_id if out_type is not None else string_type
    if chosen not in ("string", "large_string", "string_view"):
        raise TypeError(f"expected string_type (or out_type) 'string', 'large_string' or 'string_view' for a UDF "
                        f"that returns strings, got {chosen!r}")
    return chosen
