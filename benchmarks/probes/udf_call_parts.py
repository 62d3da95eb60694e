"""Probe (GPU): host microseconds of each part of a numeric UDF call (``x * 2 + 1`` on float64), each part
timed alone in a loop at steady state (mean of many calls), beside the whole ``apply`` and CuPy's
``x * 2 + 1``. The parts are the steps of udf/apply.py -> execute.py -> output.py, called as they call them.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/udf_call_parts.py [--rows N]
"""
import argparse
import time

import cupy as cp
import numpy as np

import arrowdev as ad
from arrowdev import _capsules
from arrowdev.core import chunks as _chunked
from arrowdev.gpu import memory as cuda_memory, runtime
from arrowdev.udf.run import segments as chunks, launch, prepared_calls
from arrowdev.udf.run import plan as udf_plan
from arrowdev.udf.run.apply import run_chunk
from arrowdev.udf.run.execute import run_plan
from arrowdev.udf.run.inputs import Input
from arrowdev.udf.run.buffers import Memory
from arrowdev.udf.run.output import ChunkOutput
from arrowdev.udf.spec import Target


def per_call(fn, calls):
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def split_at_launch(call, calls):
    """Medians (us) of: call start -> launch entry, the launch, launch exit -> call end (the driver launch,
    ``launch.launch_flat``, wrapped: both the general and the prepared path call it)."""
    stamps = []
    original = launch.launch_flat

    def stamped(*a, **k):
        stamps.append(time.perf_counter())
        original(*a, **k)
        stamps.append(time.perf_counter())

    launch.launch_flat = stamped
    try:
        parts = []
        for _ in range(calls):
            stamps.clear()
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            parts.append((stamps[0] - t0, stamps[1] - stamps[0], t1 - stamps[1]))
    finally:
        launch.launch_flat = original
    import statistics

    return [statistics.median(p[i] for p in parts) * 1e6 for i in range(3)]


def _flat(prepared, held, n, out_ptr):
    """The parameters as PreparedCall.__call__ lays them out (one input, an output of n items)."""
    flat = [n, 0, 0, 0, n, 8, out_ptr, n, 8, *prepared.stand_in, 0]
    for reader in prepared.readers:
        flat += reader(held, n)
        flat += prepared.stand_in
        flat += (held.offset, 0)
    return flat


def device_context():
    with cp.cuda.Device(0):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    x = cp.arange(args.rows, dtype=cp.float64)
    col = ad.column(x)
    f = lambda v: v * 2 + 1  # noqa: E731
    stream = runtime.stream_for(0)
    col.apply(f)
    device = col.device
    held = _chunked.chunks(col)[0]
    inputs = [Input(col.type, held, 0)]
    mem = Memory(device)
    plan = udf_plan.plan_for(f, inputs, Target.CUDA, False, None, None, "string")
    out = ChunkOutput(mem, plan, args.rows, 0)
    kargs = [out.pad, out.values, out.flags, np.int64(0), *inputs[0].kernel_args(mem, args.rows)]
    event = runtime.SyncEvent(stream, 0)
    col.apply(f)
    key, _ = prepared_calls._key(f, [col], False, None, "string")
    prepared = prepared_calls._prepared[key]
    parts = {
        "whole col.apply": lambda: col.apply(f),
        "run_chunk": lambda: run_chunk(f, inputs, device, False, None),
        "run_plan": lambda: run_plan(plan, inputs, mem),
        "Memory(device)": lambda: Memory(device),
        "plan_for (kept)": lambda: udf_plan.plan_for(f, inputs, Target.CUDA, False, None, None, "string"),
        "chunks.of + aligned_segments": lambda: chunks.aligned_segments([chunks.of(col)]),
        "Input(...)": lambda: Input(col.type, held, 0),
        "wait_on_events (1 event)": lambda: runtime.wait_on_events(stream, [event.address]),
        "DeviceBuffer(8 B/row)": lambda: cuda_memory.DeviceBuffer(8 * args.rows, 0, stream),
        "ChunkOutput(...)": lambda: ChunkOutput(mem, plan, args.rows, 0),
        "kernel_args": lambda: inputs[0].kernel_args(mem, args.rows),
        "launch.launch (direct)": lambda: launch.launch(plan.kernel, args.rows, kargs, stream.ptr, 0),
        "SyncEvent": lambda: runtime.SyncEvent(stream, 0),
        "keep_until + release_finished": lambda: cuda_memory.keep_until(event.event, [held]),
        "_capsules.build": lambda: _capsules.build(col.type, args.rows, 0, 0, [0, out.values_ptr], [],
                                                  device_type=device.code, device_id=0, keepalive=[out.values_keep]),
        "ArrowColumn(dtype, [held])": lambda: type(col)(col.type, [held]),
        "cupy x * 2 + 1": lambda: x * 2 + 1,
        "cupy empty": lambda: cp.empty(args.rows, dtype=cp.float64),
        "cp.cuda.Device(0) enter/exit": device_context,
        "cudaGetDevice": lambda: cp.cuda.runtime.getDevice(),
        "prepared: _key": lambda: prepared_calls._key(f, [col], False, None, "string"),
        "prepared: wait on the column's events": lambda: runtime.wait_on_events(stream, [held.sync_event]),
        "prepared: the flat parameters": lambda: _flat(prepared, held, args.rows, out.values_ptr),
        "prepared: launch_flat": lambda: launch.launch_flat(prepared.entry, 0, launch.grid_blocks(args.rows),
                                                            stream.ptr, _flat(prepared, held, args.rows, out.values_ptr), True),
    }
    with stream:
        before, during, after = split_at_launch(lambda: col.apply(f), args.calls)
        stream.synchronize()
        print(f"col.apply: {before:.1f} us before the launch, {during:.1f} us launching, {after:.1f} us after", flush=True)
        for name, fn in parts.items():
            us = per_call(fn, args.calls)
            stream.synchronize()
            print(f"{name:34s} {us:8.2f} us/call", flush=True)


if __name__ == "__main__":
    main()
