"""The importing side of leases: one connection per exporting process, held while leases on it are held.

:func:`lease` connects to the exporter's socket (:mod:`arrowdev.cuda.lease_server`) on first use, checks
that the server runs as this user (``SO_PEERCRED``), asks for a lease and returns a :class:`Lease`. The
connection is shared by every lease on that exporter. When the last one is released (its ``RELEASE`` sent) the
connection stays open, idle, for the next lease from that exporter, for the ``IDLE_KEPT`` exporters used last:
a handoff then skips the connect and the greeting, half a lease's cost (``bench_ipc.py --leases-only``). An idle
connection whose exporter has gone is replaced at its next use. Closing a connection (or this process dying,
which closes it too) gives back, on the exporter's side, every lease it held.

Releasing never blocks: a lease is released from finalizers (the last array over imported memory going, in
any thread, maybe inside a garbage collection), so the ``RELEASE`` line is sent only when the connection's
lock is free, else queued and sent by the lock's holder when it lets go.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import socket
import threading
from typing import Callable

from ..errors import InvalidArrowError
from . import lease_server

CONNECT_TIMEOUT = 10.0  # seconds an exporter has to greet and to answer a lease request
IDLE_KEPT = 8  # connections without leases kept open, to the exporters used last


class Connection:
    """A connection to one exporting process's lease server."""

    def __init__(self, address: str, pid: int) -> None:
        self.address, self.pid = address, pid
        self._lock = threading.Lock()
        self._unsent: list[bytes] = []
        self.leases = 0  # leases held or being asked for through this connection; it closes at 0
        self.sock: socket.socket | None = None  # connected by the first lease request
        self._received = b""  # bytes read past the last line taken

    def request(self, line: str) -> str:
        """Sends ``line`` and returns the exporter's answer ("" when the connection closed)."""
        self.send_request(line)
        return self.answer()

    def send_request(self, line: str) -> None:
        """Sends ``line`` and keeps the connection to this thread until :meth:`answer`, which must follow unless
        this raised. The caller may work meanwhile."""
        self._lock.acquire()
        try:
            if self.sock is None:
                self.sock = _connect(self.address, self.pid)
                try:
                    _check_greeting(self._next_line(), self.address, self.pid)
                except BaseException:
                    self.close()
                    self.sock, self._received = None, b""
                    raise
            self.sock.sendall(line.encode("ascii"))
        except PermissionError:  # the server is another user's, or refused this process
            self._lock.release()
            raise
        except OSError as e:
            self._lock.release()
            raise self._no_answer(e) from None
        except BaseException:
            self._lock.release()
            raise

    def answer(self) -> str:
        """The exporter's answer to the line :meth:`send_request` sent ("" when the connection closed)."""
        try:
            return self._next_line()
        except OSError as e:
            raise self._no_answer(e) from None
        finally:
            self._lock.release()
            self._flush()

    def _no_answer(self, e: OSError) -> InvalidArrowError:
        return InvalidArrowError(f"the exporting process (pid {self.pid}) did not answer at {self.address} ({e}): "
                                 f"it has gone, or is stuck; the handle is stale")

    def _next_line(self) -> str:
        while b"\n" not in self._received:
            chunk = self.sock.recv(lease_server.MAX_LINE * 4)  # type: ignore[union-attr]
            if not chunk:
                line, self._received = self._received, b""
                return line.decode("ascii", "replace").strip()
            self._received += chunk
        line, self._received = self._received.split(b"\n", 1)
        return line.decode("ascii", "replace").strip()

    def lease(self, export_id: str) -> int:
        """A lease id on ``export_id``; InvalidArrowError when the exporter refuses or has gone."""
        return self.lease_answer(self.request(f"LEASE {export_id}\n"))

    def lease_answer(self, answer: str) -> int:
        """The lease id in the exporter's ``answer`` to ``LEASE``; InvalidArrowError when it refused or has gone."""
        if not answer:
            raise InvalidArrowError(f"the exporting process (pid {self.pid}) has gone: its lease connection "
                                    f"closed; the handle is stale")
        words = answer.split(" ", 1)
        if words[0] == "OK" and len(words) == 2 and words[1].isdigit():
            return int(words[1])
        reason = words[1] if len(words) == 2 else answer
        raise InvalidArrowError(f"the exporting process (pid {self.pid}) refused a lease: {reason}")

    def send_later(self, line: bytes) -> None:
        """Sends ``line`` now if the lock is free, else when its holder lets go (never blocks)."""
        self._unsent.append(line)
        self._flush()

    def _flush(self) -> None:
        while self._unsent:
            if not self._lock.acquire(blocking=False):
                return  # the holder flushes after letting go
            try:
                lines, self._unsent[:] = list(self._unsent), []
                with contextlib.suppress(OSError, AttributeError):  # the exporter has gone: nothing to release
                    self.sock.sendall(b"".join(lines))  # type: ignore[union-attr]
            finally:
                self._lock.release()

    def alive(self) -> bool:
        """False once the exporter has closed the connection (exited, died, or broke its leases). The server
        never speaks unasked, so a connection with something to read has reached its end."""
        if self.sock is None:
            return False
        if not self._lock.acquire(blocking=False):
            return True  # a request is under way on it
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return not readable or self.sock.recv(1, socket.MSG_PEEK) != b""
        except (OSError, ValueError):
            return False
        finally:
            self._lock.release()

    def close(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self.sock.close()  # type: ignore[union-attr]


def _connect(address: str, pid: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(address)
        _, server_uid = lease_server.peer_credentials(sock)
        if server_uid != lease_server.this_uid():
            raise PermissionError(f"the lease server at {address} runs as uid {server_uid}, not as this process's "
                                  f"uid {lease_server.this_uid()}: arrowdev takes leases only from its own user")
    except (FileNotFoundError, ConnectionRefusedError) as e:
        sock.close()
        raise InvalidArrowError(f"the exporting process (pid {pid}) has gone: nothing answers at its lease socket "
                                f"{address} ({type(e).__name__}); the handle is stale") from None
    except PermissionError:
        sock.close()
        raise
    except OSError as e:
        sock.close()
        raise InvalidArrowError(f"cannot reach the exporting process (pid {pid}) at {address}: {e}") from None
    return sock


def _check_greeting(greeting: str, address: str, pid: int) -> None:
    """The server's first line: its greeting, or why it refused this process (it then closes the connection)."""
    if greeting.startswith("REFUSED"):
        raise PermissionError(f"the exporting process (pid {pid}) refused this process: {greeting[8:]}")
    if not greeting.startswith(lease_server.GREETING.decode()):
        raise InvalidArrowError(f"{address} is not an arrowdev lease server (it said {greeting[:60]!r})")


class Lease:
    """One lease on another process's export: the memory stays there until :meth:`release` (or this
    object's death, or this process's)."""

    __slots__ = ("connection", "id", "export", "_released", "__weakref__")

    def __init__(self, connection: Connection, lease_id: int, export: str) -> None:
        self.connection, self.id, self.export, self._released = connection, lease_id, export, False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        _let_go(self.connection, f"RELEASE {self.id}\n".encode("ascii"))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the process's end closes the connection anyway
            self.release()


# ---- this process's connections -------------------------------------------------------------------------

# Re-entrant: a garbage collection while lease() holds it may run a finalizer that releases a lease here.
_lock = threading.RLock()
_connections: dict[str, Connection] = {}  # address -> connection holding leases (or asking for one)
_idle: dict[str, Connection] = {}  # address -> open connection holding none, oldest first


def lease(address: str, export_id: str, pid: int) -> Lease:
    """A lease on export ``export_id`` of the exporting process ``pid`` whose lease server is at ``address``."""
    return start_lease(address, export_id, pid)()


def start_lease(address: str, export_id: str, pid: int) -> Callable[[], Lease]:
    """Sends the request for the lease :func:`lease` takes and returns the function that waits for the answer
    and returns the :class:`Lease` (or raises): the caller works while the exporter answers (import_ipc maps
    the memory meanwhile). The returned function must be called, and before any other lease is asked for from
    the same exporter in this thread (the connection is this thread's until then)."""
    stale = None
    with _lock:
        conn = _connections.get(address)
        if conn is None:
            conn = _idle.pop(address, None)
            if conn is not None and not conn.alive():  # its exporter closed it: connect again
                stale, conn = conn, None
            conn = _connections[address] = conn or Connection(address, pid)
        conn.leases += 1  # counted before asking: a release elsewhere must not close it meanwhile
    if stale is not None:
        stale.close()
    try:
        conn.send_request(f"LEASE {export_id}\n")
    except BaseException:
        _let_go(conn, None, keep=False)
        raise

    def finish() -> Lease:
        try:
            lease_id = conn.lease_answer(conn.answer())
        except BaseException:
            _let_go(conn, None, keep=False)
            raise
        return Lease(conn, lease_id, export_id)
    return finish


def _let_go(conn: Connection, line: bytes | None, keep: bool = True) -> None:
    """Gives up one lease of ``conn`` (or the count taken while asking for one) and sends ``line``. When it was
    the last, the connection is kept idle for the next lease (``keep``; the least recently used beyond
    ``IDLE_KEPT`` is closed), or closed: the exporter then gives back everything this process held there."""
    closing: list[Connection] = []
    with _lock:
        conn.leases -= 1
        last = conn.leases <= 0 and _connections.get(conn.address) is conn
        if last:
            del _connections[conn.address]
            if keep and conn.sock is not None:
                _idle[conn.address] = conn
                while len(_idle) > IDLE_KEPT:
                    closing.append(_idle.pop(next(iter(_idle))))
            else:
                closing.append(conn)
    if line is not None and conn not in closing:
        conn.send_later(line)
    for old in closing:
        old.close()


def ask(address: str, line: str) -> str | None:
    """The exporter's answer to ``line`` over this process's open connection to ``address`` (one that holds
    leases); None when there is none."""
    with _lock:
        conn = _connections.get(address)
        if conn is None:
            return None
        conn.leases += 1  # kept open while asking
    try:
        return conn.request(line)
    finally:
        _let_go(conn, None)


def stats() -> dict[str, int]:
    """``leases_held`` by this process on other processes' exports, ``exporters`` it holds them from, and
    ``leases_broken``: of those held, how many are on exporters that have closed their end (exited or died)."""
    with _lock:
        conns = list(_connections.values())
    return {"leases_held": sum(c.leases for c in conns), "exporters": len(conns),
            "leases_broken": sum(c.leases for c in conns if not c.alive())}


def _after_fork_in_child() -> None:
    """A forked child must not keep the parent's connections open: the exporter would not see them close
    when the parent dies. The child's copies of imported objects hold no lease of their own (CUDA does not
    work across fork anyway)."""
    for conn in [*_connections.values(), *_idle.values()]:
        conn.close()  # the child's copy only; releases from the child's objects then send nothing
    _connections.clear()
    _idle.clear()


def _close_idle() -> None:
    """At exit: the idle connections closed (they hold no lease; the exporters see EOF, as they would from
    the process's end, and no socket is left for the interpreter to warn about)."""
    with _lock:
        idle = list(_idle.values())
        _idle.clear()
    for conn in idle:
        conn.close()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_idle)
