"""A CUDA kernel that spins for a while before it writes, for tests that check nobody reads early."""

SOURCE = r"""
extern "C" __global__ void slow_write(long long* out, long long n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) {}
    for (long long i = threadIdx.x; i < n; i += blockDim.x) out[i] = i + 1000;
}
"""
SPIN = 200_000_000  # clock cycles: about 0.1 s


# (event, array) of kernels queued: each array is kept until its kernel has run. A caller's array of one item, made
# and dropped on the spot on CuPy's current stream, would go back to CuPy's pool there while the kernel, on another
# stream, still had to write it: the next allocation on the current stream would get the block and see it change
_pending: list = []


def slow_write(cupy, out, stream) -> None:
    """Queues on ``stream`` a kernel that spins, then writes ``i + 1000`` into every item of the int64
    CuPy array ``out`` (kept alive here until the kernel has run)."""
    kernel = cupy.RawKernel(SOURCE, "slow_write")
    kernel((1,), (256,), (out, cupy.int64(out.size), cupy.int64(SPIN)), stream=stream)
    _pending[:] = [(event, array) for event, array in _pending if not event.done]
    _pending.append((stream.record(), out))
