"""Probe (GPU, not a benchmark against a peer): ways to copy 1.3 GB of pageable host memory to the device,
each a wall-clock median of 5: one pinned->device memcpy (the ceiling), the driver's own staging from
pageable memory, memmove into pinned memory alone with 1-16 threads, staging into one pinned buffer as
large as the copy (8 or 16 threads, 2-32 MiB pieces), a ring of pinned slots refilled by worker threads
(the design of arrowdev/gpu/staging.py), and cudaHostRegister of the source. The figures behind
docs/device.md.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_to_device_staging.py
"""
import ctypes, statistics, threading, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np, cupy as cp

N = 1_300_000_000
rt = cp.cuda.runtime
src = np.ones(N, dtype=np.uint8); src[::4096] = 3
dst = cp.empty(N, dtype=cp.uint8)
stream = cp.cuda.Stream(non_blocking=True)

def wall(fn, runs=5):
    fn(); stream.synchronize()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter(); fn(); stream.synchronize(); t.append(time.perf_counter() - t0)
    return statistics.median(t)

def report(name, s):
    print(f"{name:55s} {s*1e3:8.1f} ms {N/s/1e9:6.1f} GB/s", flush=True)

pinned = cp.cuda.alloc_pinned_memory(N)
report("pinned -> device one memcpy", wall(lambda: rt.memcpyAsync(dst.data.ptr, pinned.ptr, N, 1, stream.ptr)))
report("pageable -> device one memcpy (driver staging)", wall(lambda: rt.memcpyAsync(dst.data.ptr, src.ctypes.data, N, 1, stream.ptr)))

for T in (1, 4, 8, 16):
    pool = ThreadPoolExecutor(T)
    P = 8 << 20
    def host_only():
        list(pool.map(lambda o: ctypes.memmove(pinned.ptr + o, src.ctypes.data + o, min(P, N - o)), range(0, N, P)))
    report(f"memmove pageable->pinned only, {T} threads, 8 MiB", wall(host_only))
    pool.shutdown()

def current(T, P):
    pool = ThreadPoolExecutor(T)
    def run():
        offs = list(range(0, N, P))
        futs = [pool.submit(ctypes.memmove, pinned.ptr + o, src.ctypes.data + o, min(P, N - o)) for o in offs]
        for o, f in zip(offs, futs):
            f.result(); rt.memcpyAsync(dst.data.ptr + o, pinned.ptr + o, min(P, N - o), 1, stream.ptr)
    s = wall(run); pool.shutdown(); return s

for T in (8, 16):
    for P in (2 << 20, 8 << 20, 32 << 20):
        report(f"current scheme T={T} piece={P>>20} MiB", current(T, P))

def ring(T, P, R):
    slots = [cp.cuda.alloc_pinned_memory(P) for _ in range(R)]
    events = [None] * R
    lock = threading.Lock()
    pool = ThreadPoolExecutor(T)
    def run():
        offs = list(range(0, N, P))
        nxt = [0]
        def worker():
            while True:
                with lock:
                    if nxt[0] >= len(offs):
                        return
                    i = nxt[0]; nxt[0] += 1
                slot = i % R
                with lock:
                    e = events[slot]
                if e is not None:
                    e.synchronize()
                o = offs[i]; size = min(P, N - o)
                ctypes.memmove(slots[slot].ptr, src.ctypes.data + o, size)
                with lock:
                    rt.memcpyAsync(dst.data.ptr + o, slots[slot].ptr, size, 1, stream.ptr)
                    ev = cp.cuda.Event(disable_timing=True); ev.record(stream); events[slot] = ev
        fs = [pool.submit(worker) for _ in range(T)]
        for f in fs: f.result()
    s = wall(run); pool.shutdown(); return s

for T, P, R in ((4, 1 << 20, 16), (8, 1 << 20, 32), (8, 2 << 20, 16), (8, 4 << 20, 16), (8, 8 << 20, 16), (16, 4 << 20, 32)):
    try:
        report(f"ring T={T} piece={P>>20} MiB slots={R}", ring(T, P, R))
    except Exception as e:
        print("ring failed", T, P, R, e)

t0 = time.perf_counter(); rt.hostRegister(src.ctypes.data, N, 0); reg = time.perf_counter() - t0
report(f"registered -> device (register took {reg*1e3:.0f} ms)", wall(lambda: rt.memcpyAsync(dst.data.ptr, src.ctypes.data, N, 1, stream.ptr)))
t0 = time.perf_counter(); rt.hostUnregister(src.ctypes.data); print(f"unregister {1e3*(time.perf_counter()-t0):.0f} ms")
ok = bool((dst[::4096] == 3).all()); print("data ok", ok)
import os; print("cpus", os.cpu_count())
