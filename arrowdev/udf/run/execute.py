"""Running one chunk: the kernel launched over the inputs in place, over bounded ranges of rows where it makes
strings or writes per-row flags (so that its working set stays bounded whatever the chunk's length), again
while a range's string arena overflows; then its output assembled. On a GPU every launch waits on the inputs'
sync events and the output carries an event recorded after the last kernel, like every other arrowdev device
array. docs/udf.md ("Memory") says what a call holds at its peak and why."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.types import DataType
from ...gpu import runtime
from ..compile import codegen
from ..spec import Kind, NullMode
from . import string_results as results
from .buffers import Memory
from .inputs import Input
from .output import ChunkOutput
from .plan import Plan
from .validity import merge_validity

__all__ = ["WORKING_SET", "batch_rows", "run_plan"]

# Bytes of scratch one range of rows may take beside the output (arena, pairs, flags): the fixed working set
# of docs/udf.md's memory bound, plus 3% of the output (as the call's first range, or else the kernel's last call,
# measured it; the bound allows a quarter). A larger share means fewer ranges but a higher peak: at 10^8 rows a
# tenth cost upper's peak 1.27x its output against libcudf's 1.24x, for no speed a range fewer bought
# (docs/strings.md, "A range's working set"). Ranges are multiples of 1024 rows (bitmaps and ballot words line up).
WORKING_SET = 192 << 20
OUTPUT_SHARE = 0.03
_ALIGN = 1024
# A string output's first range, which runs alone to measure what the column's rows take: this part of the chunk,
# at most a quarter of a range (its arena is held beside the next ranges' one until the GPU is done with it), in
# whole multiples of _ALIGN rows
FIRST_RANGE = 64


def run_plan(plan: Plan, inputs: list[Input], mem: Memory) -> tuple[DataType, Any]:
    """Launches ``plan``'s kernel over one aligned set of input chunks; returns (output type, held output)."""
    n = inputs[0].held.length
    nullable = [x for x in inputs if x.has_validity]
    if mem.gpu:
        runtime.wait_on_events(mem.stream, [x.held.sync_event for x in inputs])
    share = plan.spec.null_mode == NullMode.PROPAGATE and len(nullable) == 1 and not plan.spec.flags
    rows = batch_rows(plan, inputs, mem, n)
    output = ChunkOutput(mem, plan, n, nullable[0].held.offset % 8 if share else 0, rows)
    output.scratch.append([x.held for x in inputs])
    _run_ranges(plan, inputs, mem, output, n)
    output.assemble_values()
    if output.sink is not None:
        results.remember_output((plan.kernel, mem.device), output.sink.nbytes(), sum(output.sink.used), n)
    merge_validity(output, nullable, share)
    return output.arrow_type, output.finish()


def _run_ranges(plan: Plan, inputs: list[Input], mem: Memory, output: ChunkOutput, n: int) -> None:
    """Launches every range of rows. A string output's first range is a short one, run and checked alone: it
    measures what this column's rows take (the kernel's last call may have run over other data), and the later
    ranges are sized from that; on a GPU those are queued back to back through a pipeline
    (string_sink.Pipeline), any range it flags run again one by one with those after it."""
    rows, arena, pipe, k = output.rows, None, None, 0
    starts = list(range(0, n, rows)) if n else [0]
    if output.sink is not None and len(starts) > 1:
        first = min(rows // 4, n // FIRST_RANGE) // _ALIGN * _ALIGN
        starts = [0, *range(max(first, _ALIGN), n, rows)]
    try:
        while k < len(starts):
            start = starts[k]
            b = (starts[k + 1] if k + 1 < len(starts) else n) - start
            if pipe is not None:
                validity = (output.flags, output.bitmap) if output.writes_flags else None
                pipe.step(k, start, b, _launcher(plan, inputs, mem, output, start, b), output.values, validity)
                output.add_batch(start, b, strings=False, packed=True)
                k += 1
                if k == len(starts):
                    again = pipe.settle(starts)
                    arena, pipe = pipe.arena, None
                    k = len(starts) if again is None else again
                continue
            reads = output.range_reads(b)
            arena = _launch(plan, inputs, mem, output, start, b, arena, reads)
            output.add_batch(start, b, reads=reads)
            k += 1
            if k == 1 and output.sink is not None and k < len(starts):
                # the first range measured what a row's strings take: the later ranges sized from that
                rows = min(batch_rows(plan, inputs, mem, n, output.sink.nbytes_per_row(b)), rows)
                starts = [0, *range(b, n, rows)]
                pipe = output.sink.pipeline(arena, b, rows, len(starts))
                if pipe is not None:
                    arena = None  # the pipeline's now (or dropped, where the first range's was too small for it)
    except BaseException:
        if pipe is not None:  # ranges queued, not yet waited for
            pipe.abandon()
        raise


def _strings_in(inputs: list[Input]) -> int:
    return max(sum(x.kind.is_string for x in inputs), 1)


def batch_rows(plan: Plan, inputs: list[Input], mem: Memory, n: int, output_row: float | None = None) -> int:
    """Rows per launch: all of them where the kernel needs no scratch per row (its output is sized exactly),
    else as many as ``WORKING_SET`` (and a share of the output: ``output_row`` bytes a row, else what the
    kernel's last call made) holds: the arena a row took last time (a first guess before), the pairs and
    offsets of new strings, the flags."""
    spec = plan.spec
    if not (spec.arena or spec.flags or spec.null_mode == NullMode.AWARE):
        return max(n, 1)
    key = (plan.kernel, mem.device)
    per_row = 1 + (24 if plan.string_out else 0)
    if spec.arena:
        learned = results.bytes_per_row(key)
        per_row += learned * 1.125 if learned is not None else results.initial_capacity(None, 1, 32 * _strings_in(inputs))
    if output_row is None:
        learned_output = results.output_per_row(key)
        output_row = learned_output[0] if learned_output else 0.0
    room = WORKING_SET + OUTPUT_SHARE * n * output_row
    rows = int(room // per_row) // _ALIGN * _ALIGN
    return max(min(rows, n), _ALIGN if n > _ALIGN else max(n, 1))


def _launcher(plan: Plan, inputs: list[Input], mem: Memory, output: ChunkOutput, start: int, b: int) -> Any:
    """``launch(arena)``: the kernel over rows [start, start + b) (``arena``: the range's, or None)."""
    input_args: list[Any] = []
    for x in inputs:
        input_args.extend(x.kernel_args(mem, b, start))
    values, flags = output.batch_buffers(start, b)
    rows_per_thread = codegen.BALLOT_ROWS if plan.spec.out == Kind.BALLOT else 1

    def launch(arena: Any) -> None:
        args = [output.pad, values, flags, np.int64(arena.state_address if arena else 0), *input_args]
        mem.launch(plan.kernel, b, args, rows_per_thread)

    return launch


def _launch(plan: Plan, inputs: list[Input], mem: Memory, output: ChunkOutput, start: int, b: int,
            reuse: Any, reads: Any) -> Any:
    """Launches the kernel over rows [start, start + b) once, or (string arena) until the arena held
    everything; returns the arena (``reuse``: the last range's, taken again when large enough; ``reads``: what
    the host reads of the launch with the arena's claim, ChunkOutput.range_reads)."""
    launch = _launcher(plan, inputs, mem, output, start, b)
    if not plan.spec.arena:
        launch(None)
        return None
    return results.launch_with_arena((plan.kernel, mem.device), launch, mem, b, 32 * b * _strings_in(inputs),
                                     plan.allocates, reuse, reads)
