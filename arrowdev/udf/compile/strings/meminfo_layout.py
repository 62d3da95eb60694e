"""The memory layouts compiled string code and the host both read, stated once: NRT's MemInfo (a managed
string's header, as numba's ``nrt.cpp`` and numba-cuda's ``memory_management/nrt.cuh`` define it) and the
arena state words (written by the host, claimed from by kernels). ``tests/test_managed_strings.py`` checks
the MemInfo fields against both headers as installed.

A block in the arena is a header of ``HEADER`` bytes, laid out as a MemInfo, then the string's bytes rounded
up to ``GPU_BLOCK_ALIGN`` (so that every block starts 16-byte aligned and its header is written with three
16-byte stores: a thread's block is its own, so each store is a memory transaction of its own, and five 8-byte
ones were most of the L2 traffic of a kernel making short strings); on the CPU a ``CPU_HEADER`` and the bytes
rounded up to 8.

>>> MemInfo.DATA * WORD, HEADER, block_bytes(5, gpu=True), block_bytes(5, gpu=False)
(24, 48, 64, 16)
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ALLOCATOR_ARENA", "ALLOCATOR_DEVICE_MALLOC", "ArenaWord", "CPU_HEADER", "GPU_BLOCK_ALIGN", "HEADER",
           "MEMINFO_FIELDS", "MemInfo", "STATE_WORDS", "WORD", "block_bytes"]

WORD = 8  # every MemInfo field and arena word is 8 bytes (size_t, pointers, int64) on 64-bit targets


class MemInfo(IntEnum):
    """Word index of each field of NRT's MemInfo. CUDA's struct ends after ``SIZE`` (40 bytes); the CPU's
    has one more word, its external allocator (48 bytes)."""

    REFCT = 0
    DTOR = 1
    DTOR_INFO = 2
    DATA = 3
    SIZE = 4


MEMINFO_FIELDS = tuple(field.name.lower() for field in MemInfo)  # as the C headers name them
HEADER = 6 * WORD  # a block's header on the GPU: room for the larger (CPU) MemInfo of either NRT
CPU_HEADER = WORD  # a block's header on the CPU, where strings are not counted (managed.py): the string's size
GPU_BLOCK_ALIGN = 16  # GPU blocks (header and bytes) are multiples of this: the header goes in 16-byte stores


def block_bytes(size: int, gpu: bool) -> int:
    """Arena bytes of the block of a string of ``size`` bytes (header included)."""
    if gpu:
        return HEADER + (size + GPU_BLOCK_ALIGN - 1) // GPU_BLOCK_ALIGN * GPU_BLOCK_ALIGN
    return CPU_HEADER + (size + WORD - 1) // WORD * WORD


class ArenaWord(IntEnum):
    """Word index of each int64 of an arena's state."""

    BASE = 0  # address of the arena's first byte
    CAPACITY = 1  # bytes the arena holds
    CLAIMED = 2  # bytes claimed by atomic adds; keeps counting past the capacity, so the host sees the need
    ALLOCATOR = 3  # ALLOCATOR_ARENA, or ALLOCATOR_DEVICE_MALLOC (CUDA only, for the benchmark)


STATE_WORDS = len(ArenaWord)
ALLOCATOR_ARENA = 0
ALLOCATOR_DEVICE_MALLOC = 1  # one NRT MemInfo_alloc (device malloc) per string: the cuDF design
