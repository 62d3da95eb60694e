"""The pieces a CUDA IPC handoff is made of, each timed alone in one process (issue 35): the driver calls an export
and an import make (an allocation's range, its IPC handle, pointer attributes) and the first kernel bench_ipc.py
runs over the memory, CuPy's sum against torch's on the same 1 GiB (the two consumers use different libraries).

    python3 benchmarks/probes/ipc_calls.py [--gib 1.0] [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import time


def _median_us(call, repeats: int) -> float:  # noqa: ANN001
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def _kernel_ms(call, sync, repeats: int) -> float:  # noqa: ANN001
    call()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    import cupy as cp
    import numpy as np
    import pyarrow as pa

    import arrowdev as ad
    from arrowdev.gpu import runtime

    n = int(args.gib * (1 << 30)) // 8
    table = ad.table({"x": pa.array(np.arange(n, dtype=np.float64))}).to_device()
    address = table.column(0).buffers[1].address
    driver = runtime.driver()
    r = args.repeats
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {args.gib} GiB float64, medians (us)")
    print(f"cuMemGetAddressRange        {_median_us(lambda: driver.cuMemGetAddressRange(address), r):8.1f}")
    attrs = [driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
             driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
             driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_BUFFER_ID,
             driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL]
    print(f"cuPointerGetAttributes (4)  {_median_us(lambda: driver.cuPointerGetAttributes(4, attrs, address), r):8.1f}")
    base = int(driver.cuMemGetAddressRange(address)[1])
    print(f"cudaIpcGetMemHandle (CuPy)  {_median_us(lambda: cp.cuda.runtime.ipcGetMemHandle(base), r):8.1f}")
    print(f"runtime.pointer_device      {_median_us(lambda: runtime.pointer_device(address), r):8.1f}")
    print(f"table.to_struct_array()     {_median_us(lambda: table.to_struct_array(), r):8.1f}")
    print(f"pa.schema(...).serialize()  {_median_us(lambda: pa.schema([pa.field('x', pa.float64())]).serialize(), r):8.1f}")
    view = cp.asarray(table.column(0))
    sync = cp.cuda.runtime.deviceSynchronize
    print(f"cupy.asarray(column)        {_median_us(lambda: cp.asarray(table.column(0)), r):8.1f}")
    print(f"first kernel: cupy sum      {_kernel_ms(lambda: float(view.sum()), sync, 30) * 1e3:8.1f}")
    try:
        import torch
    except ImportError:
        print("torch is not installed: its sum is skipped")
        return
    tensor = torch.from_dlpack(table.column(0))
    print(f"torch.from_dlpack(column)   {_median_us(lambda: torch.from_dlpack(table.column(0)), r):8.1f}")
    print(f"first kernel: torch sum     {_kernel_ms(lambda: float(tensor.sum()), sync, 30) * 1e3:8.1f}")
    as_cupy = cp.asarray(tensor)
    print(f"cupy sum over torch memory  {_kernel_ms(lambda: float(as_cupy.sum()), sync, 30) * 1e3:8.1f}")


if __name__ == "__main__":
    main()
