"""Running one chunk: the kernel launched over the inputs in place (again, while its string arena
overflows), then its output assembled. On a GPU every launch waits on the inputs' sync events and the
output carries an event recorded after the kernel, like every other arrowdev device array."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cuda import runtime
from ..types import DataType
from . import codegen, string_results as results
from .inputs import Input
from .memory import Memory
from .output import ChunkOutput
from .plan import Plan
from .spec import Kind, NullMode
from .validity import merge_validity

__all__ = ["run_plan"]


def run_plan(plan: Plan, inputs: list[Input], mem: Memory) -> tuple[DataType, Any]:
    """Launches ``plan``'s kernel over one aligned set of input chunks; returns (output type, held output)."""
    n = inputs[0].held.length
    nullable = [x for x in inputs if x.has_validity]
    if mem.gpu:
        runtime.wait_on_events(mem.stream, [x.held.sync_event for x in inputs])
    share = plan.spec.null_mode == NullMode.PROPAGATE and len(nullable) == 1 and not plan.spec.flags
    output = ChunkOutput(mem, plan, n, nullable[0].held.offset % 8 if share else 0)
    output.scratch.append([x.held for x in inputs])
    arena = _launch(plan, inputs, mem, output)
    output.assemble_values(arena)
    merge_validity(output, nullable, share)
    return output.arrow_type, output.finish()


def _launch(plan: Plan, inputs: list[Input], mem: Memory, output: ChunkOutput) -> Any:
    """Launches the kernel once, or (string arena) until the arena held everything; returns the arena."""
    n = output.n
    input_args: list[Any] = []
    for x in inputs:
        input_args.extend(x.kernel_args(mem, n))
    rows_per_thread = codegen.BALLOT_ROWS if plan.spec.out == Kind.BALLOT else 1

    def launch(arena: Any) -> None:
        args = [output.pad, output.values, output.flags, np.int64(arena.state_address if arena else 0), *input_args]
        mem.launch(plan.kernel, n, args, rows_per_thread)

    if not plan.spec.arena:
        launch(None)
        return None
    strings_in = sum(x.kind.is_string for x in inputs)
    return results.launch_with_arena((plan.kernel, mem.device), launch, mem, n, 32 * n * max(strings_in, 1),
                                     plan.allocates or plan.string_out == "string_view")
