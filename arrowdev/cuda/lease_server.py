"""The exporting side of leases: a Unix domain socket per exporting process, and a thread that serves it.

An importer connects to the socket named in the handle and keeps the connection while it holds leases
(:mod:`arrowdev.cuda.lease_client`). The server's one thread waits in ``selectors`` (epoll) on the
listening socket and on every connection: a lease is asked for and granted over the connection, and when
the importer closes it (it released everything, exited, or died: the kernel closes a killed process's
sockets), the thread reads EOF and gives back every lease that importer held, at once. Nothing polls, and
nothing runs in the exporting thread's way but the bookkeeping of :mod:`arrowdev.cuda.leases`.

Who may connect: the socket lives in a per-user directory of mode 0700 (:func:`user_dir`), and each
connection's peer credentials (``SO_PEERCRED``) must name this process's user; others are refused.

At exit (``atexit``), an exporter with live leases refuses new ones and waits for them up to
:func:`exit_wait` seconds (``ARROWDEV_IPC_EXIT_WAIT``, :func:`set_exit_wait`); leases still held then are
broken, and a :class:`BrokenLeaseWarning` names them (their exports, the importers' process ids).

The wire: ASCII lines. The server greets with ``ARROWDEV-LEASES 1 <pid>`` (or ``REFUSED <why>`` and closes);
``LEASE <export>`` is answered ``OK <lease>`` or ``NO <why>``, and ``UNPUBLISH <namespace> <name> <export>``
(a getter took a published name) ``OK`` or ``NO <why>``; ``RELEASE <lease>`` gets no answer.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pathlib
import secrets
import selectors
import socket
import stat
import struct
import threading
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArrowError
from .leases import Peer, Registry

GREETING = b"ARROWDEV-LEASES 1"
MAX_LINE = 256  # the longest line a peer may send; a longer one is a protocol error and closes it
_SUN_PATH_MAX = 107  # sockaddr_un's sun_path holds 108 bytes with the terminating NUL
_DEFAULT_EXIT_WAIT = 5.0


class BrokenLeaseWarning(RuntimeWarning):
    """An exporting process exits while other processes hold leases on its memory."""


# ---- the per-user directory --------------------------------------------------------------------------


def this_uid() -> int:
    """The user this process runs as (tests change it to play another user)."""
    return os.getuid()


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


def user_dir() -> pathlib.Path:
    """The directory this user's lease sockets and published names live in: ``ARROWDEV_RUNTIME_DIR`` when
    set, else ``/tmp/arrowdev-<uid>``; made with mode 0700 when missing. PermissionError when it belongs to
    another user or others may enter it (someone else could read names or plant sockets there)."""
    path = pathlib.Path(os.environ.get("ARROWDEV_RUNTIME_DIR") or f"/tmp/arrowdev-{this_uid()}")
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=False)
    return check_private(path)


def check_private(path: pathlib.Path) -> pathlib.Path:
    """``path`` if it is a directory owned by this user that no one else may enter; else PermissionError."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{path} is not a directory (a link or a file): arrowdev keeps its lease sockets and "
                              f"published names in a private directory; remove it or set ARROWDEV_RUNTIME_DIR")
    if info.st_uid != this_uid():
        raise PermissionError(f"{path} belongs to uid {info.st_uid}, not to this process's uid {this_uid()}: "
                              f"arrowdev does not use another user's directory for its sockets and names; "
                              f"set ARROWDEV_RUNTIME_DIR to a directory of yours")
    if info.st_mode & 0o077:
        raise PermissionError(f"{path} has mode {stat.S_IMODE(info.st_mode):o}, expected 700 (others may enter it): "
                              f"run chmod 700 {path}, or set ARROWDEV_RUNTIME_DIR to a private directory")
    return path


def private_subdir(*parts: str) -> pathlib.Path:
    """A directory under :func:`user_dir`, made with mode 0700 when missing."""
    path = user_dir().joinpath(*parts)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


# ---- the server ----------------------------------------------------------------------------------------


class _Connection:
    __slots__ = ("sock", "peer", "buffer")

    def __init__(self, sock: socket.socket, peer: Peer) -> None:
        self.sock, self.peer, self.buffer = sock, peer, b""


class Server:
    """Serves ``registry``'s leases on a Unix socket in ``directory`` from one background thread."""

    def __init__(self, registry: Registry, directory: pathlib.Path) -> None:
        self.registry = registry
        self.address = str(directory / f"{os.getpid()}-{secrets.token_hex(4)}.sock")
        if len(self.address.encode()) > _SUN_PATH_MAX:
            raise OSError(f"the lease socket's path {self.address!r} is longer than a Unix socket allows "
                          f"({_SUN_PATH_MAX} bytes): set ARROWDEV_RUNTIME_DIR to a shorter directory")
        _remove_stale_sockets(directory)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.address)
        os.chmod(self.address, 0o600)
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._connections: dict[int, _Connection] = {}
        self._stopping = False
        self.name_hook: Callable[[str, str, str], bool] | None = None  # UNPUBLISH (arrowdev.cuda.publish)
        self._thread = threading.Thread(target=self._serve, name="arrowdev-leases", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Makes the thread look at the hold windows again (a new one may end sooner)."""
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def peers(self) -> int:
        return len(self._connections)

    def close(self) -> None:
        """Stops the thread, closes every connection (their importers see EOF) and removes the socket file."""
        self._stopping = True
        self.wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        self._wake_w.close()
        with contextlib.suppress(OSError):
            os.unlink(self.address)

    def forget_after_fork(self) -> None:
        """In a forked child: closes the parent's sockets (their copies here would keep the parent's
        importers from seeing EOF if the parent dies) without touching the parent's socket file."""
        for conn in list(self._connections.values()):
            conn.sock.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # ---- the thread ------------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._stopping:
                timeout = self.registry.expire()
                for key, _ in self._selector.select(timeout):
                    if key.data is None:
                        self._accept()
                    elif key.data == "wake":
                        with contextlib.suppress(BlockingIOError):
                            self._wake_r.recv(4096)
                    else:
                        self._read(key.data)
        finally:
            for conn in list(self._connections.values()):
                self._drop(conn)
            self._selector.close()
            self._listener.close()
            self._wake_r.close()

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        pid, uid = peer_credentials(sock)
        if uid != this_uid():
            with contextlib.suppress(OSError):
                sock.sendall(f"REFUSED uid {uid} may not lease memory of uid {this_uid()}\n".encode())
            sock.close()
            return
        sock.setblocking(False)
        conn = _Connection(sock, Peer(pid, uid))
        try:
            sock.sendall(GREETING + f" {os.getpid()}\n".encode())
        except OSError:
            sock.close()
            return
        self._connections[sock.fileno()] = conn
        self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # EOF: the importer closed the connection, exited or died
            self._drop(conn)
            return
        conn.buffer += data
        while b"\n" in conn.buffer:
            line, conn.buffer = conn.buffer.split(b"\n", 1)
            if not self._handle(conn, line.decode("ascii", "replace").split()):
                self._drop(conn)
                return
        if len(conn.buffer) > MAX_LINE:
            self._drop(conn)

    def _handle(self, conn: _Connection, words: list[str]) -> bool:
        """Answers one request; False for a protocol error (the connection is closed)."""
        if len(words) == 2 and words[0] == "LEASE":
            try:
                answer = f"OK {self.registry.lease(words[1], conn.peer)}\n"
            except InvalidArrowError as e:
                answer = f"NO {e}\n"
            return self._send(conn, answer)
        if len(words) == 2 and words[0] == "RELEASE" and words[1].isdigit():
            self.registry.release(int(words[1]), conn.peer)
            return True
        if len(words) == 4 and words[0] == "UNPUBLISH":
            done = self.name_hook is not None and self.name_hook(words[1], words[2], words[3])
            return self._send(conn, "OK\n" if done else "NO not published here as that export\n")
        return False

    def _send(self, conn: _Connection, text: str) -> bool:
        data = text.encode("ascii", "replace")
        try:
            sent = conn.sock.send(data)  # an answer is a short line: it fits the socket's buffer at once
        except BlockingIOError:
            sent = 0
        except OSError:
            return False
        if sent == len(data):
            return True
        try:  # a full buffer: a peer that stopped reading; it gets a second to take the rest
            conn.sock.settimeout(1.0)
            conn.sock.sendall(data[sent:])
            conn.sock.setblocking(False)
            return True
        except OSError:
            return False

    def _drop(self, conn: _Connection) -> None:
        self._connections.pop(conn.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()
        self.registry.drop_peer(conn.peer)


def _remove_stale_sockets(directory: pathlib.Path) -> None:
    """Removes socket files of processes that are gone (killed exporters leave theirs behind)."""
    for path in directory.glob("*.sock"):
        pid = path.name.split("-", 1)[0]
        if pid.isdigit() and not process_exists(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def process_exists(pid: int) -> bool:
    """True while a process of this id runs (signal 0: asks, sends nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- this process's server, its exit --------------------------------------------------------------------

_lock = threading.Lock()
_server: Server | None = None
_registry: Registry | None = None
_exit_wait: float | None = None


def registry() -> Registry:
    """This process's registry of exports and leases (made on first use, with the device memory accounting
    of lent bytes: ``memory.account_lent``)."""
    global _registry
    with _lock:
        if _registry is None:
            from ..gpu import memory

            _registry = Registry(on_lent=memory.account_lent, on_deadline=_wake)
        return _registry


def _wake() -> None:
    if _server is not None:
        _server.wake()


def server() -> Server:
    """This process's lease server, started on first use (the first export)."""
    global _server
    made = registry()
    with _lock:
        if _server is None:
            _server = Server(made, private_subdir("leases"))
            atexit.register(_at_exit)
        return _server


def running_server() -> Server | None:
    """This process's lease server if it has been started, else None (nothing is started)."""
    return _server


def exit_wait() -> float:
    """Seconds an exporting process waits at exit for the leases other processes still hold:
    :func:`set_exit_wait`, else ``ARROWDEV_IPC_EXIT_WAIT``, else 5."""
    if _exit_wait is not None:
        return _exit_wait
    value = os.environ.get("ARROWDEV_IPC_EXIT_WAIT")
    try:
        return max(0.0, float(value)) if value else _DEFAULT_EXIT_WAIT
    except ValueError:
        warnings.warn(f"ARROWDEV_IPC_EXIT_WAIT={value!r} is not a number of seconds: waiting "
                      f"{_DEFAULT_EXIT_WAIT} s", RuntimeWarning, stacklevel=2)
        return _DEFAULT_EXIT_WAIT


def set_exit_wait(seconds: float | None) -> None:
    """At exit, wait at most ``seconds`` for importers to release their leases (None: back to
    ``ARROWDEV_IPC_EXIT_WAIT`` or 5 s). 0 breaks live leases at once, with a warning naming them."""
    global _exit_wait
    if seconds is not None and (not isinstance(seconds, (int, float)) or not seconds >= 0):
        raise ValueError(f"expected a number of seconds >= 0 or None, got {seconds!r}")
    _exit_wait = None if seconds is None else float(seconds)


def _at_exit() -> None:
    """Waits for live leases (up to exit_wait()), then closes the server, warning about the leases it breaks."""
    if _server is None or _registry is None:
        return
    _registry.close()
    if _registry.live_leases():
        _registry.wait_idle(exit_wait())
    broken = _registry.live_leases()
    if broken:
        warnings.warn(broken_leases_message(broken), BrokenLeaseWarning, stacklevel=1)
    _server.close()


def broken_leases_message(broken: list[tuple[Any, int, Peer]]) -> str:
    """What an exiting exporter says about the leases it breaks."""
    by_export: dict[str, tuple[Any, set[int]]] = {}
    for export, _, peer in broken:
        by_export.setdefault(export.id, (export, set()))[1].add(peer.pid)
    parts = [f"export {eid} ({export.description or 'no description'}) held by pid(s) "
             f"{', '.join(map(str, sorted(pids)))}" for eid, (export, pids) in by_export.items()]
    return (f"arrowdev: process {os.getpid()} exits after waiting {exit_wait():g} s with {len(broken)} lease(s) "
            f"still held on its GPU memory; they are broken: {'; '.join(parts)}. Those importers now see freed "
            f"memory (CUDA leaves reading it undefined) and their next import raises InvalidArrowError. Wait "
            f"for importers before exiting, or raise the wait with ad.cuda.set_exit_wait / ARROWDEV_IPC_EXIT_WAIT")


def _after_fork_in_child() -> None:
    global _server, _registry
    if _server is not None:
        _server.forget_after_fork()
    _server, _registry = None, None  # the child exports afresh; the parent's exports are the parent's


os.register_at_fork(after_in_child=_after_fork_in_child)
