"""This process's CUDA IPC mappings: one per opened allocation, shared by every import that uses it (CUDA lets a
process open a handle only once), and kept open, idle, for a while after the last import using it went, so that
the next import of the same allocation skips ``cudaIpcOpenMemHandle`` and its close (an exporter handing out
tables from the blocks of its pool hands the same allocations again; docs/memory.md, "Mappings kept idle").

Invariants:

- A mapping's users are counted: :func:`acquire` adds one, :func:`release` takes it away; a mapping with users is
  never closed. One lock guards the counts, the idle list and every open and close, so a handle is never opened
  twice nor opened while its close is under way. The lock is reentrant: an open or a close may run the garbage
  collector, whose finalizers release other imports on the same thread.
- Keeping a mapping reads nothing: an import reads the memory only while it holds a lease (:mod:`.ipc`). A handle
  names one allocation: one made later, even at the same address, has another handle, so a kept mapping is never
  taken for a new allocation's (UCX's mapping cache relies on the same).
- What keeping costs: memory the exporter frees (``cudaFree``) while a mapping of it is kept stays allocated on
  the device until the mapping closes: after ``IDLE_SECONDS`` without a user (a thread closes it), beyond the
  ``IDLE_KEPT`` used last, at the process's exit, or at once where ``IDLE_SECONDS`` is 0.
"""

from __future__ import annotations

import atexit
import collections
import threading
import time
from typing import Any

IDLE_SECONDS = 1.0  # a mapping without users stays open this long for the next import of its allocation
IDLE_KEPT = 16  # and only the ones used last

_wake = threading.Condition(threading.RLock())
_open: dict[tuple[str, int], Mapping] = {}  # (handle, device) -> mapping, with users or idle
_idle: collections.OrderedDict[tuple[str, int], float] = collections.OrderedDict()  # key -> deadline, oldest first
_reaper: threading.Thread | None = None


class Mapping:
    """One opened allocation: ``base`` is where it is mapped in this process, ``mapped_size`` the size CUDA gives
    the mapping (what an import checks against the size the exporter states)."""

    __slots__ = ("handle", "device_id", "base", "mapped_size", "users", "_cuda")

    def __init__(self, handle: str, device_id: int, calls: Any) -> None:
        self.handle, self.device_id, self._cuda = handle, device_id, calls
        self.base = calls.open_handle(bytes.fromhex(handle), device_id)
        self.users = 0
        try:
            self.mapped_size = calls.allocation(self.base)[1]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        base, self.base = self.base, 0
        if base:
            try:
                self._cuda.close_handle(base, self.device_id)
            except Exception:  # noqa: BLE001 - at interpreter exit CUDA may be gone; the process's end unmaps
                pass


def acquire(handle: str, device_id: int, calls: Any) -> Mapping:
    """The mapping of ``handle`` (hex) on ``device_id``, with one user more: opened with ``calls``
    (``open_handle``, ``allocation``, ``close_handle``: :class:`arrowdev.cuda.ipc.CudaCalls`) unless it is open."""
    key = (handle, device_id)
    with _wake:
        made = _open.get(key)
        if made is None:
            made = _open[key] = Mapping(handle, device_id, calls)
        _idle.pop(key, None)
        made.users += 1
        return made


def release(mappings: list[Mapping], keep: bool = True) -> None:
    """One user less for each of ``mappings`` (their user's device work done); those left without users are kept
    idle (``keep`` and ``IDLE_SECONDS`` > 0) or closed."""
    closing = []
    with _wake:
        for mapping in mappings:
            mapping.users -= 1
            if mapping.users:
                continue
            key = (mapping.handle, mapping.device_id)
            if keep and IDLE_SECONDS > 0:
                _idle[key] = time.monotonic() + IDLE_SECONDS
                _idle.move_to_end(key)
            else:
                closing.append(key)
        while len(_idle) > IDLE_KEPT:
            closing.append(_idle.popitem(last=False)[0])
        for key in closing:  # none of them is idle any more
            _close(key)
        if _idle:
            _start_reaper()
            _wake.notify()


def stats() -> dict[str, int]:
    """Mappings open in this process, and how many of them are idle."""
    with _wake:
        return {"mappings_open": len(_open), "mappings_idle": len(_idle)}


def close_idle() -> None:
    """Closes every idle mapping now (at exit; tests)."""
    with _wake:
        for key in list(_idle):
            _idle.pop(key, None)
            _close(key)


def _close(key: tuple[str, int]) -> None:
    """Closes the mapping of ``key`` if it is still open and nobody took it again (the caller holds the lock)."""
    mapping = _open.get(key)
    if mapping is not None and not mapping.users:
        del _open[key]
        mapping.close()


def _start_reaper() -> None:
    global _reaper
    if _reaper is None:
        _reaper = threading.Thread(target=_reap, name="arrowdev-ipc-mappings", daemon=True)
        _reaper.start()


def _reap() -> None:
    """Closes idle mappings as their time runs out (the thread waits on the earliest deadline; a release wakes it)."""
    with _wake:
        while True:
            now = time.monotonic()
            for key in [key for key, deadline in _idle.items() if deadline <= now]:
                _idle.pop(key, None)
                _close(key)
            _wake.wait(min(_idle.values()) - now if _idle else None)


atexit.register(close_idle)
