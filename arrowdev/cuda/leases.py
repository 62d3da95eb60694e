"""Leases: what one process lent to others through CUDA IPC, and until when it must keep it.

Pure bookkeeping, with no CUDA and no sockets, so that it is tested on any machine with fake objects
(tests/test_leases.py); :mod:`arrowdev.cuda.lease_server` serves it to other processes and
:mod:`arrowdev.cuda.ipc` registers what ``export_ipc`` hands out.

The rule (docs/memory.md): an **export** holds what keeps the exported memory alive (the exported
chunks). It takes **leases**, one per import, each held by one **peer** (an importing process's
connection). The export is open to new leases while its exporting object lives, while a ``hold``
window after the export has not run out, or while any lease is held; it **ends** when none of these is
true, and only then does it drop what it holds, so the memory goes back to the pool. An export whose
exporting object is gone and that has not ended is **lent**: its pinned bytes count in
``ad.cuda.memory_stats()["bytes_lent"]``.

>>> registry = Registry()
>>> class Owner: pass
>>> owner, reader = Owner(), Peer(pid=42, uid=0)
>>> export = registry.add(keep=["chunks"], owner=owner, pins={0x1000: 64})
>>> lease = registry.lease(export.id, reader)
>>> del owner                      # the exporting object goes: the importer still holds its lease
>>> registry.stats()["bytes_lent"], export.ended
(64, False)
>>> registry.release(lease, reader)
True
>>> registry.stats()["bytes_lent"], export.ended, export.keep
(0, True, None)
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArrowError


@dataclass(frozen=True, eq=False)
class Peer:
    """One holder of leases: an importing process's connection (``pid``, ``uid`` as the OS reported
    them), or this process itself for imports of its own exports."""

    pid: int
    uid: int
    label: str = ""
    local: bool = False  # this process: its leases never hold up its exit

    def __str__(self) -> str:
        return self.label or f"pid {self.pid}"


@dataclass(eq=False)
class Export:
    """One ``export_ipc`` call's bookkeeping. ``keep`` holds the memory until the export ends (then None);
    ``pins`` maps each device buffer the export keeps alive (its address) to its size in bytes;
    ``bases`` maps each CUDA IPC handle (hex) of the export to its allocation's address here, for
    imports of the export in this same process; ``handle`` is what ``export_ipc`` returned."""

    id: str
    keep: Any
    pins: dict[int, int]
    description: str
    bases: dict[str, int]
    hold_until: float  # 0: no hold window
    owner_ref: Any = None  # a weak reference to the exporting object
    owner_alive: bool = True
    leases: dict[int, Peer] = field(default_factory=dict)
    ended: bool = False
    lent: bool = False
    handle: bytes | None = None


class Registry:
    """The exports and leases of one process.

    Thread safety: every method may be called from any thread (the lease server's thread, the thread that
    drops an exporting object, finalizers). What an ended export held is dropped outside the lock,
    and ``on_lent`` is called outside it, so that buffers' finalizers may run anything. The lock is
    re-entrant: a garbage collection inside a locked section may run a finalizer that releases a lease of
    this same process (an import of its own export) on this thread. An exporting object's death noticed
    while another thread holds the lock is queued and handled when the lock is let go (:meth:`_run_pending`).

    Parameters
    ----------
    on_lent : callable, optional
        Called with the change of the bytes lent (device memory accounting: ``memory.account_lent``).
    on_deadline : callable, optional
        Called when an export gets a hold window, so that whoever calls :meth:`expire` wakes up in time.
    clock : callable
        Seconds, monotonic (tests pass a fake clock).
    """

    def __init__(self, on_lent: Callable[[int], None] | None = None, on_deadline: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.RLock()
        self._exports: dict[str, Export] = {}
        self._by_owner: dict[int, str] = {}  # id(owner) -> its open export (removed when the owner goes)
        self._lease_ids = itertools.count(1)
        self._lease_export: dict[int, str] = {}
        self._lent_pins: dict[int, int] = {}  # pinned buffer -> lent exports pinning it (counted once)
        self._bytes_lent = 0
        self._remote = 0  # leases held by other processes (what an exiting process waits for)
        self._closing = False
        self._idle = threading.Event()
        self._idle.set()
        self._pending: list[str] = []  # exports whose owner went while the lock was held
        self._holding: set[str] = set()  # exports with a hold window that has not run out
        self._on_lent, self._on_deadline, self._clock = on_lent, on_deadline, clock

    # ---- exports ---------------------------------------------------------------------------------

    def add(self, keep: Any, *, owner: Any = None, pins: dict[int, int] | None = None, hold: float = 0.0,
            description: str = "", bases: dict[str, int] | None = None) -> Export:
        """Registers an export holding ``keep``. With ``owner`` (any object that takes weak references), the
        export is open while it lives; without, only for ``hold`` seconds or while leased."""
        if not isinstance(hold, (int, float)) or hold < 0 or hold != hold:
            raise ValueError(f"expected hold to be a number of seconds >= 0, got {hold!r}")
        export = Export(secrets.token_hex(8), keep, dict(pins or {}), description, dict(bases or {}),
                        self._clock() + hold if hold else 0.0,
                        None if owner is None else weakref.ref(owner), owner_alive=owner is not None)
        with self._lock:
            self._exports[export.id] = export
            if owner is not None:
                self._by_owner[id(owner)] = export.id
            if hold:
                self._holding.add(export.id)
        if owner is not None:
            finalizer = weakref.finalize(owner, self.owner_gone, export.id)
            finalizer.atexit = False  # at exit the exports are waited for (lease_server), not ended one by one
        else:
            self._settle_outside([export.id])
        if hold and self._on_deadline is not None:
            self._on_deadline()
        return export

    def open_export_of(self, owner: Any) -> Export | None:
        """The open export of ``owner`` made earlier, if any (a second ``export_ipc`` of one object reuses it)."""
        with self._lock:
            export = self._exports.get(self._by_owner.get(id(owner), ""))
        # owner_alive is still True for an owner whose death is queued (_pending), and its id may be another
        # object's by now: the weak reference decides
        if export is None or export.ended or export.owner_ref is None or export.owner_ref() is not owner:
            return None
        return export

    def extend_hold(self, export: Export, hold: float) -> None:
        """Keeps ``export`` open at least ``hold`` seconds from now."""
        with self._lock:
            export.hold_until = max(export.hold_until, self._clock() + hold)
            if hold and not export.ended:
                self._holding.add(export.id)
        if hold and self._on_deadline is not None:
            self._on_deadline()

    def find(self, export_id: str) -> Export | None:
        with self._lock:
            return self._exports.get(export_id)

    def owner_gone(self, export_id: str) -> None:
        """The exporting object of ``export_id`` is gone (its weak reference's callback)."""
        self._pending.append(export_id)  # list.append is atomic: safe while another frame holds the lock
        self._run_pending()

    def _run_pending(self) -> None:
        """Handles exports whose owner went; whoever holds the lock runs this after letting it go."""
        while self._pending:
            if not self._lock.acquire(blocking=False):
                return  # the holder runs it when it lets the lock go
            try:
                ids, self._pending[:] = list(self._pending), []
                for export_id in ids:
                    export = self._exports.get(export_id)
                    if export is not None:
                        export.owner_alive = False
                        owners = [k for k, v in self._by_owner.items() if v == export_id]
                        for key in owners:
                            del self._by_owner[key]
            finally:
                self._lock.release()
            self._settle_outside(ids)

    # ---- leases ----------------------------------------------------------------------------------

    def lease(self, export_id: str, peer: Peer) -> int:
        """A new lease on ``export_id`` for ``peer``; InvalidArrowError when the export has ended (or never
        was) or this process is exiting."""
        with self._lock:
            export = self._exports.get(export_id)
            if self._closing:
                raise InvalidArrowError("the exporting process is exiting: it lends nothing more")
            if export is None or export.ended or not self._open(export):
                raise InvalidArrowError(
                    f"export {export_id} has ended: its exporting object was dropped and no importer held a "
                    f"lease on it (keep the object alive until importers have imported it, publish it, or "
                    f"export it with hold=SECONDS)")
            lease_id = next(self._lease_ids)
            export.leases[lease_id] = peer
            self._lease_export[lease_id] = export_id
            if not peer.local:
                self._remote += 1
                self._idle.clear()
        return lease_id

    def release(self, lease_id: int, peer: Peer) -> bool:
        """Ends ``peer``'s lease ``lease_id``; False when it holds no such lease."""
        with self._lock:
            export_id = self._lease_export.get(lease_id)
            export = self._exports.get(export_id or "")
            if export is None or export.leases.get(lease_id) is not peer:
                return False
            del export.leases[lease_id], self._lease_export[lease_id]
            self._remote -= not peer.local
        self._settle_outside([export.id])
        return True

    def drop_peer(self, peer: Peer) -> int:
        """Ends every lease ``peer`` holds (its connection closed: it released, exited or died); how many."""
        with self._lock:
            mine = [(lease_id, export_id) for lease_id, export_id in self._lease_export.items()
                    if self._exports[export_id].leases.get(lease_id) is peer]
            for lease_id, export_id in mine:
                del self._exports[export_id].leases[lease_id], self._lease_export[lease_id]
            self._remote -= 0 if peer.local else len(mine)
        self._settle_outside(sorted({export_id for _, export_id in mine}))
        return len(mine)

    # ---- time, exit, counts ----------------------------------------------------------------------

    def expire(self) -> float | None:
        """Ends exports whose hold window ran out with nothing else keeping them open; the seconds until the
        next window runs out (None: none pending)."""
        now = self._clock()
        with self._lock:
            waiting = [self._exports[i] for i in self._holding if i in self._exports]
            due = [e.id for e in waiting if e.hold_until <= now]
            later = [e.hold_until - now for e in waiting if e.hold_until > now]
            self._holding = {e.id for e in waiting if e.hold_until > now}
        self._settle_outside(due)
        return min(later) if later else None

    def close(self) -> None:
        """Refuses new leases from now on (the process is exiting)."""
        with self._lock:
            self._closing = True

    def wait_idle(self, timeout: float) -> bool:
        """Waits until other processes hold no lease, at most ``timeout`` seconds; True when they hold none."""
        return self._idle.wait(timeout)

    def live_leases(self) -> list[tuple[Export, int, Peer]]:
        """(export, lease id, holder) of every lease other processes hold now."""
        with self._lock:
            return [(e, lease_id, peer) for e in self._exports.values() for lease_id, peer in e.leases.items()
                    if not peer.local]

    def stats(self) -> dict[str, int]:
        """``exports`` open, ``exports_lent`` (their exporting object gone), ``leases_granted`` held now,
        ``importers`` (distinct peers holding them), ``bytes_lent``."""
        with self._lock:
            peers = {id(p) for e in self._exports.values() for p in e.leases.values()}
            return {"exports": len(self._exports), "exports_lent": sum(e.lent for e in self._exports.values()),
                    "leases_granted": len(self._lease_export), "importers": len(peers),
                    "bytes_lent": self._bytes_lent}

    # ---- ending ----------------------------------------------------------------------------------

    def _open(self, export: Export) -> bool:
        return export.owner_alive or bool(export.leases) or export.hold_until > self._clock()

    def _settle_outside(self, export_ids: list[str]) -> None:
        """Brings the exports' states up to date: lent or not, ended or not; then, outside the lock, drops
        what ended exports held and reports the change of bytes lent."""
        dropped: list[Any] = []
        change = 0
        with self._lock:
            for export_id in export_ids:
                export = self._exports.get(export_id)
                if export is None or export.ended:
                    continue
                if not self._open(export):
                    export.ended = True
                    dropped.append(export.keep)
                    export.keep = None
                    del self._exports[export_id]
                change += self._set_lent(export, not export.owner_alive and not export.ended)
            if not self._remote:
                self._idle.set()
        if change and self._on_lent is not None:
            self._on_lent(change)
        del dropped  # buffers go back to the pool here, outside the lock
        self._run_pending()

    def _set_lent(self, export: Export, lent: bool) -> int:
        """Counts or uncounts the export's pinned bytes (each buffer once over every lent export); the change."""
        if export.lent == lent:
            return 0
        export.lent, change = lent, 0
        for address, size in export.pins.items():
            count = self._lent_pins.get(address, 0) + (1 if lent else -1)
            if lent and count == 1:
                change += size
            elif not lent and count == 0:
                change -= size
            if count:
                self._lent_pins[address] = count
            else:
                self._lent_pins.pop(address, None)
        self._bytes_lent += change
        return change
