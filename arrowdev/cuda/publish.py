"""Tables by name between the processes of one node and one user: ``publish("name", table)`` in one,
``get("name")`` in any other, zero-copy through CUDA IPC with leases (docs/memory.md).

A published name is a file holding the table's ``export_ipc()`` bytes, in ``<user_dir>/names/<namespace>/``
(:func:`arrowdev.cuda.lease_server.user_dir`: ``ARROWDEV_RUNTIME_DIR`` or ``/tmp/arrowdev-<uid>``, mode
0700). The operating system's file permissions scope the names: another user can neither list nor read
them (and a directory that another user owns, or that others may enter, is refused); two jobs of one user
keep apart by namespace (``namespace=`` or ``ARROWDEV_NAMESPACE``, default ``"default"``).

The publishing process keeps the table alive while it is published; :func:`unpublish` (or the process's
exit) removes the name, and the memory stays until the last importer releases its lease.
``get(name, take=True)`` hands the table over: the getter takes its lease, then the publisher drops the
name, so the memory is freed when the getter is done with it, with no further word between them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pathlib
import re
import secrets
import threading
import time
from typing import Any

from ..errors import InvalidArrowError
from . import ipc, lease_client, lease_server

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")
_lock = threading.Lock()
_held: dict[tuple[str, str], tuple[Any, bytes]] = {}  # (namespace, name) -> (object, handle), this process's
_exit_hook_set = False


def _checked(value: str, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"expected a {what} of letters, digits, '.', '_' or '-' (starting with a letter or digit, "
                         f"at most 200), got {value!r}")
    return value


def _namespace(namespace: str | None) -> str:
    return _checked(namespace if namespace is not None else os.environ.get("ARROWDEV_NAMESPACE", "default"),
                    "namespace")


def _directory(namespace: str) -> pathlib.Path:
    return lease_server.private_subdir("names", namespace)


def publish(name: str, obj: Any, *, namespace: str | None = None, replace: bool = False) -> None:
    """Publishes a device column or table as ``name``: any process of this node and user gets it with
    :func:`get`. This process keeps ``obj`` alive until :func:`unpublish` or its exit.

    ValueError when ``name`` is published by another live process (or by this one) and ``replace`` is
    False; a name whose publisher has gone is taken over.
    """
    ns, name = _namespace(namespace), _checked(name, "name")
    handle = ipc.export_ipc(obj)
    path = _directory(ns) / name
    with _lock:
        if (ns, name) in _held and not replace:
            raise ValueError(f"{name!r} is already published by this process in namespace {ns!r}: "
                             f"unpublish it first, or pass replace=True")
        _write_new(path, handle, replace)
        _held[(ns, name)] = (obj, handle)
        lease_server.server().name_hook = _unpublished_by_peer  # get(take=True) from other processes
        _set_exit_hook()


def _write_new(path: pathlib.Path, handle: bytes, replace: bool) -> None:
    """Writes ``handle`` to ``path`` atomically; refuses a name a live process holds unless ``replace``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(handle)
        try:
            os.link(temporary, path)  # fails if the name exists: two publishers cannot both win
        except FileExistsError:
            holder = _publisher_alive(path)
            if holder is not None and not replace:
                raise ValueError(f"{path.name!r} is already published by process {holder} in namespace "
                                 f"{path.parent.name!r}: pick another name, or pass replace=True") from None
            os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _publisher_alive(path: pathlib.Path) -> int | None:
    """The pid of the process that published ``path`` if it still runs, else None."""
    try:
        header, _ = ipc.parse_handle(path.read_bytes())
    except (OSError, ValueError):
        return None
    target = header["leases"][0]
    alive = pathlib.Path(target["address"]).exists() and lease_server.process_exists(target["pid"])
    return target["pid"] if alive else None



def get(name: str, *, namespace: str | None = None, take: bool = False, wait: float = 0.0) -> Any:
    """The column or table published as ``name``, zero-copy, holding a lease on it until it goes.

    ``take=True`` asks the publisher to unpublish it once the lease is taken (a handover: the memory goes
    back to the publisher's pool when this process is done with it). ``wait``: seconds to wait for the
    name to appear. KeyError when no such name is published; InvalidArrowError when its publisher has gone
    (the stale name is removed).
    """
    ns, name = _namespace(namespace), _checked(name, "name")
    with _lock:
        mine = _held.get((ns, name))
    if mine is not None:  # published by this process: the object itself
        if take:
            unpublish(name, namespace=ns)
        return mine[0]
    path = _directory(ns) / name
    handle = _read(path, wait)
    try:
        obj = ipc.import_ipc(handle)
    except InvalidArrowError:
        if _publisher_alive(path) is None:
            with contextlib.suppress(FileNotFoundError):
                if path.read_bytes() == handle:
                    path.unlink()
        raise
    if take:  # answered once the publisher has let go: the name is gone when this returns
        header, _ = ipc.parse_handle(handle)
        target = header["leases"][0]
        lease_client.ask(target["address"], f"UNPUBLISH {ns} {name} {target['export']}\n")
    return obj


def _read(path: pathlib.Path, wait: float) -> bytes:
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                known = sorted(p.name for p in path.parent.iterdir() if not p.name.startswith("."))
                raise KeyError(f"no table is published as {path.name!r} in namespace {path.parent.name!r} "
                               f"(published there: {', '.join(known) or 'none'})") from None
            time.sleep(0.01)


def unpublish(name: str, *, namespace: str | None = None) -> bool:
    """Removes ``name`` if this process published it; True if it did. Importers keep their leases: the
    memory goes back to the pool when the last of them releases it."""
    ns, name = _namespace(namespace), _checked(name, "name")
    with _lock:
        entry = _held.pop((ns, name), None)
    if entry is None:
        return False
    _remove_if_ours(_directory(ns) / name, entry[1])
    return True


def _remove_if_ours(path: pathlib.Path, handle: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == handle:
            path.unlink()


def names(namespace: str | None = None) -> list[str]:
    """The names published in ``namespace`` by live processes (stale names of dead publishers are removed)."""
    directory = _directory(_namespace(namespace))
    live = []
    for path in sorted(directory.iterdir()):
        if path.name.startswith("."):
            continue
        if _publisher_alive(path) is not None:
            live.append(path.name)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return live


def _unpublished_by_peer(namespace: str, name: str, export_id: str) -> bool:
    """A getter took ``name`` (``get(take=True)``): drops it if it still is that export; True if it did
    (the lease server's thread calls this)."""
    with _lock:
        entry = _held.get((namespace, name))
        if entry is None:
            return False
        header, _ = ipc.parse_handle(entry[1])
        if header["leases"][0]["export"] != export_id:
            return False
        del _held[(namespace, name)]
    with contextlib.suppress(PermissionError, OSError):
        _remove_if_ours(_directory(namespace) / name, entry[1])
    del entry  # the object goes here: the getter's lease keeps its memory
    return True


def _set_exit_hook() -> None:
    global _exit_hook_set
    if not _exit_hook_set:
        atexit.register(_unpublish_all)  # registered after the lease server's: runs before it waits for leases
        _exit_hook_set = True


def _unpublish_all() -> None:
    with _lock:
        entries = list(_held.items())
        _held.clear()
    for (ns, name), (_, handle) in entries:
        with contextlib.suppress(OSError):
            _remove_if_ours(_directory(ns) / name, handle)
