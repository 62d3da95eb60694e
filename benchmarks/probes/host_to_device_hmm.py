"""Probe (GPU machine): can the GPU read pageable host memory itself (HMM), with no staging copy on the host?

``to_device()`` of pageable memory moves every byte three times through the host's memory (the source read
and a pinned slot written by a staging thread, the slot read by the DMA engine); the pinned ceiling moves it
once. Where the driver offers pageable memory access (Linux HMM, ``CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS``)
a kernel can read a NumPy array's own pages over PCIe. This prints the device's attributes and, where the
access is offered, times against the pinned ceiling and ``to_device()`` (the source rewritten by the CPU before
every round, untimed, as a host table is before its transfer):

- a copy kernel reading the pageable source with no hints (the driver may migrate the pages to the GPU,
  which the CPU's next touch moves back: also timed);
- the same after ``cuMemAdvise`` preferring host memory and mapping it for the GPU (reads over PCIe);
- ``READ_MOSTLY`` plus a prefetch to the GPU (read-duplicated pages), then the kernel, the hint dropped after.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_hmm.py [--gib 1] [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import runtime  # noqa: E402

_COPY = cp.RawKernel(r"""
extern "C" __global__ void copy16(const uint4* src, uint4* dst, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}""", "copy16")


def attributes(drv) -> dict[str, int]:
    names = ["PAGEABLE_MEMORY_ACCESS", "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", "CONCURRENT_MANAGED_ACCESS",
             "HOST_NATIVE_ATOMIC_SUPPORTED", "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST", "HOST_REGISTER_SUPPORTED"]
    out = {}
    for name in names:
        attr = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}", None)
        if attr is not None:
            err, value = drv.cuDeviceGetAttribute(attr, 0)
            out[name] = value if err == drv.CUresult.CUDA_SUCCESS else f"error {err}"
    return out


def location(drv, on_host: bool):
    loc = drv.CUmemLocation()
    loc.type = (drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST if on_host
                else drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE)
    loc.id = 0
    return loc


def check(result, what: str) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"{what}: {err}")


def kernel_copy(src: int, dst: int, nbytes: int, stream: cp.cuda.Stream) -> None:
    _COPY((132 * 16,), (512,), (np.uintp(src), np.uintp(dst), np.uint64(nbytes // 16)), stream=stream)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    drv = runtime.driver()
    attrs = attributes(drv)
    print(f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, driver "
          f"{cp.cuda.runtime.driverGetVersion()}: {attrs}", flush=True)
    nbytes = int(args.gib * (1 << 30)) // 16 * 16
    source = np.empty(nbytes // 8, dtype=np.float64)
    source[:] = np.arange(source.size, dtype=np.float64)
    col = ad.column(source)
    device = cp.cuda.alloc(nbytes)
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    stream = cp.cuda.Stream(non_blocking=True)
    s = stream.ptr

    def hints(*advice) -> None:
        for name, on_host in advice:
            check(drv.cuMemAdvise(source.ctypes.data, nbytes, getattr(drv.CUmem_advise, name), location(drv, on_host)),
                  name)

    def advised_remote() -> None:
        hints(("CU_MEM_ADVISE_SET_PREFERRED_LOCATION", True), ("CU_MEM_ADVISE_SET_ACCESSED_BY", False))
        kernel_copy(source.ctypes.data, device.ptr, nbytes, stream)

    def read_mostly() -> None:
        hints(("CU_MEM_ADVISE_SET_READ_MOSTLY", False))
        check(drv.cuMemPrefetchAsync(source.ctypes.data, nbytes, location(drv, False), 0, s), "prefetch")
        kernel_copy(source.ctypes.data, device.ptr, nbytes, stream)
        stream.synchronize()
        hints(("CU_MEM_ADVISE_UNSET_READ_MOSTLY", False))

    ways = {"ceiling (pinned -> device)": lambda: cp.cuda.runtime.memcpyAsync(
                device.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice, s),
            "to_device() (staging ring)": lambda: col.to_device()._wait_for_producers()}
    if attrs.get("PAGEABLE_MEMORY_ACCESS") == 1:
        ways.update({"kernel reads pageable, no hints": lambda: kernel_copy(source.ctypes.data, device.ptr, nbytes, stream),
                     "advised: host preferred, mapped for GPU": advised_remote,
                     "READ_MOSTLY + prefetch + kernel": read_mostly})
    else:
        print("pageable memory access is not offered: only the staging ring and the ceiling are timed")
    samples: dict[str, list[float]] = {k: [] for k in ways}
    touch: dict[str, list[float]] = {k: [] for k in ways}
    for round_ in range(args.rounds + 1):
        for name, fn in list(ways.items()):
            source += 0.0  # the CPU writes the source (its pages come back to host memory)
            cp.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            try:
                fn()
                cp.cuda.runtime.deviceSynchronize()
            except Exception as e:  # a refused hint is reported, the way dropped
                print(f"{name}: {type(e).__name__}: {e}", flush=True)
                del ways[name]
                continue
            t1 = time.perf_counter()
            total = float(source[:: 1 << 9].sum())  # the CPU reads it again: pages migrated away come back
            t2 = time.perf_counter()
            if round_:
                samples[name].append(t1 - t0)
                touch[name].append(t2 - t1)
            if "kernel" in name or "advised" in name:
                got = cp.ndarray(source.size, dtype=cp.float64, memptr=device)[:: 1 << 9].sum()
                assert float(got) == total, (name, float(got), total)
    top = statistics.median(samples[next(iter(samples))])
    for name in ways:
        t = statistics.median(samples[name])
        print(f"{name:42s} {t * 1e3:8.1f} ms {nbytes / t / 1e9:6.1f} GB/s  of ceiling {top / t:.2f}; the CPU's "
              f"next strided read {statistics.median(touch[name]) * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
