"""UDFs on a GPU over host data of any size: ``col.apply(f, device="cuda")`` / ``tbl.apply(..., device=0)``.

Host columns that fit the GPU with their result are copied there whole, and the result stays there. Larger
ones stream through it in ranges of rows: while range k runs its kernel, range k + 1 is copied in (the host
stages pageable memory through pinned buffers meanwhile) and range k - 1's result goes back to pinned host
memory on a stream of its own, so the host link and the GPU work at once. At most three ranges are on the
GPU at a time; their size comes from the GPU's free memory (and ``ad.cuda.set_limit``). The result of a
streamed call is a host column (CPU-readable ``cuda_host`` memory) of one chunk per range, or, where the first
range says the whole result takes at most a tenth of that room, a GPU column (its chunks stay where they were
made).

This module sits with the user objects and is made of their operations (slices, copies, ``apply``) on the
columns it is handed; ``column.py`` and ``table.py`` call it (it imports neither).
docs/udf.md ("Data larger than the GPU") has the measured throughput.
"""

from __future__ import annotations

from typing import Any, Callable

from .core import chunks

__all__ = ["apply_on_gpu", "gpu_for", "range_rows"]

_IN_FLIGHT = 3  # ranges on the GPU at once: one copied in, one computed, one copied out
_OUT_PER_IN = 1.25  # a result's bytes per input byte, guessed before the first range says
# A streamed call's result stays on the GPU where the first range says all of it takes at most this share of the
# room (the ranges are sized from the rest): a small result (a predicate's bits over 127 GB of input: 1 GB) then
# costs no pinned host buffer a range, whose allocation (cudaHostAlloc, about 2 GB/s) idled the link for a seventh
# of the call (benchmarks/probes/streaming_phases.py).
_KEEP_SHARE = 0.1


def range_rows(rows: int, bytes_per_row: float, room: int) -> int:
    """Rows per range so that ``_IN_FLIGHT`` ranges of input and result fit in ``room`` bytes (a multiple
    of 1024, at least 1024 rows; all of them when they fit).

    >>> range_rows(10**9, 8.0, 8 << 30)
    159072256
    >>> range_rows(10**6, 8.0, 8 << 30)
    1000000
    """
    per_row = bytes_per_row * (1 + _OUT_PER_IN)
    rows_fit = int(room / (_IN_FLIGHT * max(per_row, 1.0))) // 1024 * 1024
    if rows * per_row <= room:
        return max(rows, 1)
    return max(rows_fit, 1024)


def _room(device_id: int) -> int:
    """Bytes a call may use on the GPU: what is free, within arrowdev's limit, less a margin for the
    UDF's own working set."""
    from .gpu import memory, runtime

    cp = runtime.cupy()
    with cp.cuda.Device(device_id):
        free = int(cp.cuda.runtime.memGetInfo()[0])
    limit = memory.limit_left()
    room = free if limit is None else min(free, limit)
    return max(room - (512 << 20), room // 2)


def gpu_for(device: Any, where: Any) -> int | None:
    """The GPU a UDF call runs on: None to run where the data is (``device`` None, or "cpu" for CPU data),
    else a device id ("cuda": the current GPU). Data on a GPU runs there only."""
    if device is None or (device == "cpu" and where.is_cpu_readable):
        return None
    if device != "cuda" and (isinstance(device, bool) or not isinstance(device, int) or device < 0):
        raise ValueError(f"expected device None, 'cpu', 'cuda' or a GPU index, got {device!r}")
    if not where.is_cpu_readable:
        if device in ("cuda", where.id):
            return None
        raise ValueError(f"the data is on {where}, device={device!r} asks for another: copy it with to_device() first")
    if device == "cuda":
        from .gpu import runtime

        return int(runtime.cupy().cuda.runtime.getDevice())
    return int(device)


def apply_on_gpu(run: Callable[[list[Any]], Any], columns: list[Any],
                 device_id: int) -> Any:
    """``run(columns)`` (a UDF call over equally long columns) on GPU ``device_id`` for host ``columns``:
    whole when they fit (the result stays on the GPU), else streamed in ranges (a host result)."""
    from .core.types import Device
    from .cuda import copy_columns
    from .gpu import runtime

    rows = len(columns[0])
    per_row = sum(c.nbytes for c in columns) / max(rows, 1)
    room = _room(device_id)
    step = range_rows(rows, per_row, room)
    if step >= rows:
        return run([c.to_device(device_id) for c in columns])
    step = range_rows(rows, per_row, int(room * (1 - _KEEP_SHARE)))  # room kept for results that stay
    cp = runtime.cupy()
    with cp.cuda.Device(device_id):
        copy_in, copy_out = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    starts = range(0, rows, step)

    def copy_in_range(start: int) -> list[Any]:  # the columns in one batch: one staging pipeline for all of them
        return copy_columns([c[start:start + step] for c in columns], Device("cuda", device_id), copy_in,
                            rechunk=None)  # a range of many small chunks (pq.read_table's) arrives as one, as to_device
    arriving = copy_in_range(0)
    results: list[Any] = []
    stay = None
    for start in starts:
        here = arriving
        computed = run(here)  # queued (a kernel waits on the copy's event); strings wait for their sizes
        if start + step < rows:  # the next range's copy overlaps this range's kernel
            arriving = copy_in_range(start + step)
        if stay is None:  # the first range says how large the whole result will be
            stay = computed.nbytes / max(len(computed), 1) * rows <= _KEEP_SHARE * room
        results.append(computed if stay else computed.to_host(stream=copy_out))  # back on a stream of its own
        del here, computed
    return type(results[0])(results[0].type, [held for result in results for held in chunks.chunks(result)])
