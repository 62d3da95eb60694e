"""Probe (GPU, not a benchmark against a peer): hand-written ballot kernels for the membership UDF with
1, 2 or 4 rows per thread, plain / ld.global.cs / ld.global.cg loads, one row block per thread or a
grid-stride loop, on int64 and float64 columns of 10^8 and 10^9 rows. Prints each kernel's CUDA-event
median as a share of the device copy bandwidth and checks its bits against ``cupy.isin``. The figures
behind docs/udf.md's choice of four rows per thread and streaming loads (arrowdev.udf.compile.codegen.BALLOT_ROWS).

    bash .gpu-wheels/run.sh python3 benchmarks/probes/ballot_rows_per_thread.py
"""
import statistics
import cupy as cp
from numba import cuda

def ev_median(fn, runs=30):
    s = cp.cuda.get_current_stream()
    fn(); cp.cuda.runtime.deviceSynchronize()
    out = []
    for _ in range(runs):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(s); fn(); b.record(s); b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return statistics.median(out)

def make(K, load, stride_loop):
    ld = {"plain": "a[{i}]", "ldcs": "cuda.ldcs(a, {i})", "ldcg": "cuda.ldcg(a, {i})"}[load]
    body = []
    for k in range(K):
        body.append(f"x{k} = {ld.format(i=f'base + {k*32}')} if base + {k*32} < n else a[0]")
    for k in range(K):
        body.append(f"w{k} = cuda.ballot_sync(0xFFFFFFFF, base + {k*32} < n and (x{k} == 1027 or x{k} == 1000 or x{k} == 59 or x{k} == 980))")
        body.append(f"if lane == 0 and base + {k*32} < n:\n    out[(base + {k*32}) >> 5] = w{k}")
    inner = "\n".join(body)
    if stride_loop:
        ind = "\n".join("        " + l for l in inner.split("\n"))
        src = f"""
def kern(n, a, out):
    t = cuda.grid(1)
    lane = t & 31
    nw = cuda.gridsize(1) >> 5
    w = t >> 5
    while w * {32*K} < n:
        base = w * {32*K} + lane
{ind}
        w += nw
"""
    else:
        ind = "\n".join("    " + l for l in inner.split("\n"))
        src = f"""
def kern(n, a, out):
    t = cuda.grid(1)
    lane = t & 31
    base = (t >> 5) * {32*K} + lane
{ind}
"""
    ns = {"cuda": cuda}
    exec(src, ns)
    return cuda.jit(ns["kern"])

sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
for rows in (10**8, 10**9):
    for dt in ("int64", "float64"):
        a = (cp.arange(rows, dtype=cp.int64) % 2000).astype(dt)
        tgt = cp.empty_like(a)
        copy = ev_median(lambda: cp.cuda.runtime.memcpyAsync(tgt.data.ptr, a.data.ptr, a.nbytes, 3, cp.cuda.get_current_stream().ptr))
        cbw = 2 * a.nbytes / copy
        ref = cp.isin(a, cp.asarray((1027, 1000, 59, 980), dtype=dt))
        bits = cp.empty((rows + 31) // 32, dtype=cp.uint32)
        for K in (1, 2, 4):
            for load in ("plain", "ldcs", "ldcg"):
                for stride in (False, True):
                    k = make(K, load, stride)
                    if stride:
                        blocks = sms * 8
                    else:
                        blocks = ((rows + 32 * K - 1) // (32 * K) * 32 + 255) // 256
                    s = ev_median(lambda: k[blocks, 256](rows, a, bits))
                    ok = bool((cp.unpackbits(bits.view(cp.uint8), bitorder="little")[:rows].astype(bool) == ref).all())
                    print(f"{dt} {rows:.0e} K={K} {load:5s} gridstride={stride!s:5s} {s*1e3:.3f} ms of copy {(a.nbytes + rows/8)/s/cbw:.2f} ok={ok}", flush=True)
        del a, tgt, ref, bits
