"""Probe (GPU machine): does the host copy into pinned staging memory lose bandwidth to ordinary stores?

glibc's memcpy switches to non-temporal (streaming) stores only above a threshold (a share of the L3 cache);
staging pieces of a few MiB sit below it, so each destination line is first read for ownership and later
snooped back out of the cache by the DMA. This probe compiles a small streaming-store copy (SSE2 / AVX2
``stream`` stores, ``sfence``) with the machine's C compiler and times, in one process, interleaved:
memmove into pinned memory alone (glibc against streaming, 1 and 12 threads, 4 MiB pieces), and
``to_device()`` of bench_transfer's table with the staging ring's copy swapped, beside the pinned ceiling.

    bash .gpu-wheels/run.sh python3 benchmarks/probes/host_copy_stores.py [--gib 1.0] [--runs 7]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import arrowdev as ad  # noqa: E402
from arrowdev.gpu import staging  # noqa: E402
from bench_transfer import make_table, table_bytes  # noqa: E402

SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n) {
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    if (head > n) head = n;
    memcpy(d, s, head); d += head; s += head; n -= head;
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s), b = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64)), e = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_stream_si256((__m256i *)d, a); _mm256_stream_si256((__m256i *)(d + 32), b);
        _mm256_stream_si256((__m256i *)(d + 64), c); _mm256_stream_si256((__m256i *)(d + 96), e);
    }
    _mm_sfence();
    memcpy(d, s, n);
}
static void copy_sse2(char *d, const char *s, size_t n) {
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) head = n;
    memcpy(d, s, head); d += head; s += head; n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a); _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c); _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence();
    memcpy(d, s, n);
}
void stream_copy_avx2(void *d, const void *s, size_t n) { copy_avx2(d, s, n); }
void stream_copy_sse2(void *d, const void *s, size_t n) { copy_sse2(d, s, n); }
int has_avx2(void) { return __builtin_cpu_supports("avx2"); }
"""


def compile_copies() -> ctypes.CDLL:
    folder = tempfile.mkdtemp()
    c, so = os.path.join(folder, "copy.c"), os.path.join(folder, "copy.so")
    with open(c, "w") as f:
        f.write(SOURCE)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, c], check=True)
    lib = ctypes.CDLL(so)  # ctypes drops the GIL around foreign calls: threads copy in parallel
    for name in ("stream_copy_avx2", "stream_copy_sse2"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return lib


def describe_host() -> None:
    libc = ctypes.CDLL(None)
    libc.gnu_get_libc_version.restype = ctypes.c_char_p
    print("glibc", libc.gnu_get_libc_version().decode(), "|", platform.processor() or platform.machine())
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print("\n".join(line for line in out.splitlines() if any(k in line for k in ("Model name", "L3", "NUMA node(", "Thread"))))
    for path in ("/sys/kernel/mm/transparent_hugepage/enabled",):
        if os.path.exists(path):
            print(path, open(path).read().strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    describe_host()
    lib = compile_copies()
    copies = {"glibc memmove": ctypes.memmove, "stream sse2": lib.stream_copy_sse2}
    if lib.has_avx2():
        copies["stream avx2"] = lib.stream_copy_avx2

    table = make_table(args.gib)
    nbytes = table_bytes(table)
    src = ad.table(table)
    stream = cp.cuda.Stream(non_blocking=True)
    device = cp.cuda.alloc(nbytes)
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    host = np.frombuffer(table.column("b").chunks[0].buffers()[1], dtype=np.uint8)
    print(f"table {nbytes / 1e9:.2f} GB; memmove alone over {host.nbytes / 1e9:.2f} GB")
    check = np.empty(1 << 20, dtype=np.uint8)
    for name, copy in copies.items():  # each copy is right, odd addresses included
        check[:] = 0
        copy(check.ctypes.data + 3, host.ctypes.data + 5, check.nbytes - 100)
        assert np.array_equal(check[3:-97], host[5:5 + check.nbytes - 100]), name

    piece = staging.PIECE
    pools = {t: ThreadPoolExecutor(t) for t in (1, staging.WORKERS)}

    def host_only(copy, threads):
        def run():
            list(pools[threads].map(lambda o: copy(pinned.ptr + o, host.ctypes.data + o, min(piece, host.nbytes - o)),
                                    range(0, host.nbytes, piece)))
        return run

    original = staging.stage

    def to_device_with(copy):
        def stage(staged, source, size, rebase):
            copy(staged, source, size)
            if rebase is not None:
                staging.rebase_offsets(staged, size, rebase)

        def run():
            staging.stage = stage
            try:
                out = src.to_device()
                cp.cuda.runtime.deviceSynchronize()
            finally:
                staging.stage = original
            return out
        return run

    ways = {"ceiling (pinned -> device)": (lambda: cp.cuda.runtime.memcpyAsync(
        device.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice, stream.ptr), nbytes)}
    for name, copy in copies.items():
        for threads in pools:
            ways[f"{name} into pinned, {threads} threads"] = (host_only(copy, threads), host.nbytes)
        ways[f"to_device with {name}"] = (to_device_with(copy), nbytes)
    samples = {k: [] for k in ways}
    for round_ in range(args.runs + 1):
        for name, (fn, _) in ways.items():
            t0 = time.perf_counter()
            out = fn()
            stream.synchronize()
            cp.cuda.runtime.deviceSynchronize()
            if round_:
                samples[name].append(time.perf_counter() - t0)
            del out
    ceiling = statistics.median(samples["ceiling (pinned -> device)"])
    for name, (_, size) in ways.items():
        s = statistics.median(samples[name])
        of = f"of ceiling {ceiling / s:.2f}" if size == nbytes else ""
        print(f"{name:44s} {s * 1e3:7.1f} ms {size / s / 1e9:6.1f} GB/s {of:18s} "
              f"(runs: {' '.join(f'{x * 1e3:.0f}' for x in samples[name])})", flush=True)
    assert to_device_with(copies[list(copies)[-1]])().to_host().to_pyarrow().equals(table)


if __name__ == "__main__":
    main()
