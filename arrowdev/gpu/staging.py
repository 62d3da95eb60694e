"""Host-to-device copies of pageable memory, staged through a small ring of pinned buffers.

The DMA engine reads only page-locked memory, so pageable bytes are first copied into pinned
buffers, by several threads (one core copies far below PCIe's rate). The pinned memory is a ring of
RING_SLOTS buffers of PIECE bytes, not one buffer as large as the copy (the ring measured faster:
docs/device.md has the figures): each worker thread takes the next piece, waits until the copy that
last used its slot has finished (a CUDA event per piece), fills the slot and queues that slot's DMA
itself.

Invariant: a slot is overwritten only after the DMA that read its previous piece has completed.
"""

from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import memory, runtime

# benchmarks/probes/staging_settings.py (docs/device.md): on the H100 machine 12 workers and 4 MiB pieces
# reached 0.88 of the pinned ceiling where 8 workers and 8 MiB pieces reached 0.72
PIECE = 4 << 20
RING_SLOTS = 24
WORKERS = 12
_workers = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="arrowdev-staging")

Piece = tuple[int, int, int, "tuple[int, int] | None"]  # (device address, host address, bytes, offsets rebase)


def split(dst: int, src: int, nbytes: int, rebase: tuple[int, int] | None) -> list[Piece]:
    """One copy cut into pieces of at most PIECE bytes (a multiple of every offset width)."""
    return [(dst + first, src + first, min(PIECE, nbytes - first), rebase) for first in range(0, nbytes, PIECE)]


def stage(staged: int, src: int, size: int, rebase: tuple[int, int] | None) -> None:
    """Copies one piece of host memory, rebasing offsets on the way (memmove drops the GIL)."""
    ctypes.memmove(staged, src, size)
    if rebase is not None:
        rebase_offsets(staged, size, rebase)


def rebase_offsets(address: int, nbytes: int, rebase: tuple[int, int]) -> None:
    """Subtracts ``rebase[1]`` from the offsets (``rebase[0]`` bytes wide) in host memory at ``address``."""
    width, value = rebase
    view = np.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=np.int32 if width == 4 else np.int64)
    np.subtract(view, view.dtype.type(value), out=view)


def host_to_device(pieces: list[Piece], device_id: int, stream: Any) -> list[Any]:
    """Queues every piece's copy on ``stream``; returns the pinned buffers, which must live until
    an event recorded on ``stream`` after this call has fired. Small copies are staged by the calling
    thread into one buffer."""
    total = sum(size for _, _, size, _ in pieces)
    if total <= PIECE:
        staging = memory.PinnedBuffer(total)
        position = 0
        for dst, src, size, rebase in pieces:
            stage(staging.ptr + position, src, size, rebase)
            _memcpy(dst, staging.ptr + position, size, stream)
            position += size
        return [staging]
    ring = _Ring(pieces, device_id, stream)
    runs = [_workers.submit(ring.work) for _ in range(min(WORKERS, len(pieces)))]
    for run in runs:
        run.result()  # re-raises a worker's error
    return ring.slots


def _memcpy(dst: int, src: int, nbytes: int, stream: Any) -> None:
    api = runtime.cupy().cuda.runtime
    api.memcpyAsync(dst, src, nbytes, api.memcpyHostToDevice, stream.ptr)


class _Ring:
    """The pieces of one transfer, handed to worker threads in order; piece i uses slot i % slots."""

    def __init__(self, pieces: list[Piece], device_id: int, stream: Any) -> None:
        self.pieces, self.device_id, self.stream = pieces, device_id, stream
        size = max(size for _, _, size, _ in pieces)
        self.slots = [memory.PinnedBuffer(size) for _ in range(min(RING_SLOTS, len(pieces)))]
        self.queued = [threading.Event() for _ in pieces]  # piece i's DMA and its event are queued
        self.copied: list[Any] = [None] * len(pieces)  # the CUDA event after piece i's DMA
        self.next, self.failed = 0, False
        self.lock = threading.Lock()

    def work(self) -> None:
        try:
            with runtime.cupy().cuda.Device(self.device_id):
                while (i := self._take()) is not None:
                    self._copy(i)
        except BaseException:
            self.failed = True
            for queued in self.queued:  # wake the other workers: they stop too
                queued.set()
            raise

    def _take(self) -> int | None:
        with self.lock:
            if self.failed or self.next == len(self.pieces):
                return None
            self.next += 1
            return self.next - 1

    def _copy(self, i: int) -> None:
        slot = self.slots[i % len(self.slots)]
        previous = i - len(self.slots)
        if previous >= 0:  # the slot's last DMA must be done before the slot is overwritten
            self.queued[previous].wait()
            if self.failed:
                return
            self.copied[previous].synchronize()
        dst, src, size, rebase = self.pieces[i]
        stage(slot.ptr, src, size, rebase)
        with self.lock:  # the DMA and the event after it, queued together
            _memcpy(dst, slot.ptr, size, self.stream)
            event = runtime.cupy().cuda.Event(disable_timing=True)
            event.record(self.stream)
            self.copied[i] = event
        self.queued[i].set()
