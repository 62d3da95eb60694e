"""Leases across processes without a GPU: the bookkeeping (arrowdev/cuda/leases.py) with fake exported
objects and a fake clock; the lease server and its importers over real Unix sockets, with real second
processes (one killed with SIGKILL, an exporter that exits with live leases); peers and directories of
another user refused. The CUDA IPC wiring over fake handles is in tests/test_publish.py; GPU tests of the
same rules are in tests/test_ipc.py."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from arrowdev import InvalidArrowError
from arrowdev.cuda import lease_client, lease_server
from arrowdev.cuda.leases import Peer, Registry
from support.scripts import Children, wait_for


class Owner:
    """An exporting object (the table): anything that takes weak references."""


class Kept:
    """What an export holds (the exported chunks); counts how often it was let go."""

    dropped = 0

    def __del__(self):
        Kept.dropped += 1


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def kept():
    Kept.dropped = 0
    return Kept


# ---- bookkeeping ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_memory_is_kept_until_the_owner_and_every_lease_are_gone_in_any_order(kept, seed):
    lent = []
    registry = Registry(on_lent=lent.append)
    owner, a, b = Owner(), Peer(1, 0), Peer(2, 0)
    export = registry.add(kept(), owner=owner, pins={0x10: 100, 0x20: 28})
    holders = [("owner", None), ("lease", (registry.lease(export.id, a), a)),
               ("lease", (registry.lease(export.id, a), a)), ("lease", (registry.lease(export.id, b), b))]
    random.Random(seed).shuffle(holders)
    owner_gone = False
    for i, (kind, lease) in enumerate(holders):
        assert kept.dropped == 0 and not export.ended
        if kind == "owner":
            del owner
            owner_gone = True
        else:
            assert registry.release(*lease)
        last = i == len(holders) - 1
        assert export.ended == last and kept.dropped == int(last)
        assert registry.stats()["bytes_lent"] == (128 if owner_gone and not last else 0)
    assert sum(lent) == 0 and registry.stats() == {"exports": 0, "exports_lent": 0, "leases_granted": 0,
                                                   "importers": 0, "bytes_lent": 0}


def test_a_peer_leasing_one_export_many_times_gives_all_back_when_it_goes(kept):
    registry = Registry()
    export = registry.add(kept(), owner=Owner())  # the owner is dropped at once: only leases keep it
    assert export.ended and kept.dropped == 1
    owner = Owner()
    export = registry.add(kept(), owner=owner)
    peer, other = Peer(7, 0), Peer(8, 0)
    ids = [registry.lease(export.id, peer) for _ in range(3)]
    registry.lease(export.id, other)
    assert not registry.release(ids[0], other)  # a lease is released only by its holder
    del owner
    assert registry.stats()["leases_granted"] == 4 and registry.stats()["importers"] == 2
    assert registry.drop_peer(peer) == 3 and not export.ended
    assert registry.drop_peer(other) == 1 and export.ended and kept.dropped == 2


def test_a_lease_on_an_ended_export_is_refused(kept):
    registry = Registry()
    owner = Owner()
    export = registry.add(kept(), owner=owner)
    peer = Peer(3, 0)
    registry.release(registry.lease(export.id, peer), peer)  # leased and released while the owner lives
    assert not export.ended
    del owner
    with pytest.raises(InvalidArrowError, match="has ended: its exporting object was dropped"):
        registry.lease(export.id, peer)
    with pytest.raises(InvalidArrowError, match="has ended"):
        registry.lease("0123456789abcdef", peer)
    registry.close()
    with pytest.raises(InvalidArrowError, match="exiting"):
        registry.lease(registry.add(kept(), owner=Owner(), hold=5).id, peer)


def test_a_hold_window_keeps_an_export_open_after_its_owner_goes(kept):
    clock, woken = Clock(), []
    registry = Registry(clock=clock, on_deadline=lambda: woken.append(1))
    owner = Owner()
    export = registry.add(kept(), owner=owner, hold=10.0, pins={1: 8})
    assert woken == [1]
    del owner
    assert not export.ended and registry.stats()["bytes_lent"] == 8  # held for importers to come
    clock.now += 4
    assert registry.expire() == pytest.approx(6.0)
    peer = Peer(4, 0)
    lease = registry.lease(export.id, peer)
    clock.now += 7  # the window ran out while leased: the lease keeps it
    assert registry.expire() is None and not export.ended
    registry.release(lease, peer)
    assert export.ended and kept.dropped == 1 and registry.stats()["bytes_lent"] == 0
    export = registry.add(kept(), hold=1.0)  # no owner at all: only the window
    clock.now += 2
    assert registry.expire() is None and export.ended


def test_a_buffer_pinned_by_two_lent_exports_is_counted_once():
    lent = []
    registry = Registry(on_lent=lent.append)
    owners = [Owner(), Owner()]
    exports = [registry.add([], owner=o, pins={0x100: 64, 0x200 + i: 8}) for i, o in enumerate(owners)]
    peer = Peer(5, 0)
    leases = [registry.lease(e.id, peer) for e in exports]
    owners.clear()
    assert registry.stats()["bytes_lent"] == 64 + 8 + 8 and sum(lent) == 80
    registry.release(leases[0], peer)
    assert registry.stats()["bytes_lent"] == 64 + 8
    registry.release(leases[1], peer)
    assert registry.stats()["bytes_lent"] == 0 and sum(lent) == 0


def test_an_owner_noticed_by_the_finalizer_of_something_kept_elsewhere_settles():
    """An exporting object that dies in the middle of another export's ending (its last reference held by
    what that export kept) is handled too: both end, nothing is left counted."""
    registry = Registry()
    inner_owner = Owner()
    inner = registry.add(["inner"], owner=inner_owner)
    outer = registry.add([inner_owner], owner=Owner())  # dropping outer's keep drops inner's owner
    del inner_owner
    assert outer.ended and inner.ended and registry.stats()["exports"] == 0


def test_leases_from_many_threads_balance(kept):
    registry = Registry()
    owners = [Owner() for _ in range(20)]
    exports = [registry.add(kept(), owner=o, pins={i: 1}) for i, o in enumerate(owners)]
    peers = [Peer(100 + i, 0) for i in range(8)]

    def work(peer):
        mine = [registry.lease(e.id, peer) for e in exports for _ in range(5)]
        for lease in mine[::2]:
            registry.release(lease, peer)
        registry.drop_peer(peer)
    threads = [threading.Thread(target=work, args=(p,)) for p in peers]
    for t in threads:
        t.start()
    owners.clear()  # the owners go while the threads lease and release
    for t in threads:
        t.join()
    assert all(e.ended for e in exports) and kept.dropped == 20
    assert registry.stats() == {"exports": 0, "exports_lent": 0, "leases_granted": 0, "importers": 0, "bytes_lent": 0}
    assert registry.wait_idle(0)


# ---- over sockets, with other processes --------------------------------------------------------------------


@pytest.fixture
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("leases")
    directory.chmod(0o700)
    registry = Registry()
    made = lease_server.Server(registry, directory)
    yield made
    made.close()


_IMPORTER = """
import sys, time
from arrowdev.cuda import lease_client
address, export, pid, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
held = [lease_client.lease(address, export, pid) for _ in range(count)]
print("leased", flush=True)
for line in sys.stdin:
    if line.strip() == "release-one":
        held.pop().release()
        print("released", flush=True)
    elif line.strip() == "exit":
        break
"""


@pytest.fixture
def spawn():
    with Children() as children:
        yield children.start


def _importer(spawn, server, export_id, count):
    child = spawn(_IMPORTER, server.address, export_id, str(os.getpid()), str(count))
    assert child.stdout.readline().strip() == "leased", child.stderr.read()
    return child


def test_a_killed_importer_gives_its_leases_back_within_a_second(server, kept, spawn):
    owner = Owner()
    export = server.registry.add(kept(), owner=owner, pins={1: 4096})
    child = _importer(spawn, server, export.id, 3)
    assert server.registry.stats()["leases_granted"] == 3 and server.peers() == 1
    del owner  # the exporter drops its object mid-use: the importer's leases keep the memory
    assert server.registry.stats()["bytes_lent"] == 4096 and kept.dropped == 0
    killed = time.monotonic()
    os.kill(child.pid, signal.SIGKILL)
    wait_for(lambda: export.ended, 1.0)  # the kernel closed its socket: EOF in the server's thread
    assert time.monotonic() - killed < 1.0 and child.wait() == -signal.SIGKILL
    assert kept.dropped == 1 and server.registry.stats()["leases_granted"] == 0
    assert server.registry.stats()["bytes_lent"] == 0


def test_an_importer_releases_one_lease_then_exits_holding_another(server, kept, spawn):
    owner = Owner()
    export = server.registry.add(kept(), owner=owner)
    child = _importer(spawn, server, export.id, 2)
    assert Children.ask(child, "release-one") == "released"
    wait_for(lambda: server.registry.stats()["leases_granted"] == 1, 1.0)
    del owner
    Children.finish(child)
    wait_for(lambda: export.ended, 1.0)  # exiting without releasing closes the connection: the lease is back
    assert kept.dropped == 1


def test_a_handle_used_after_its_lease_ended_is_refused(server, kept):
    owner = Owner()
    export = server.registry.add(kept(), owner=owner)
    lease = lease_client.lease(server.address, export.id, os.getpid())
    assert lease_client.stats()["leases_held"] == 1
    lease.release()
    wait_for(lambda: server.registry.stats()["leases_granted"] == 0, 1.0)
    assert lease_client.stats()["leases_held"] == 0
    assert server.peers() == 1  # the connection stays open, idle, for the next lease
    del owner
    with pytest.raises(InvalidArrowError, match="refused a lease: export .* has ended"):
        lease_client.lease(server.address, export.id, os.getpid())
    wait_for(lambda: server.peers() == 0, 1.0)  # a refused lease closes it
    with pytest.raises(InvalidArrowError, match="has gone: nothing answers .* stale"):
        lease_client.lease(server.address + ".gone", export.id, 12345)


def test_peers_and_servers_of_another_user_are_refused(server, monkeypatch, kept):
    owner = Owner()
    export = server.registry.add(kept(), owner=owner)
    real = lease_server.peer_credentials

    def another_user(sock):
        pid, uid = real(sock)
        return pid, uid + 1
    monkeypatch.setattr(lease_server, "peer_credentials", another_user)  # this process now sees other users
    with pytest.raises(PermissionError, match="runs as uid .* not as this process's"):
        lease_client.lease(server.address, export.id, os.getpid())  # the client refuses the server
    child = subprocess.run([sys.executable, "-c", _IMPORTER, server.address, export.id, str(os.getpid()), "1"],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode != 0 and "PermissionError" in child.stderr and "may not lease memory" in child.stderr
    assert server.registry.stats()["leases_granted"] == 0  # and the server refused the child


def test_a_directory_of_another_user_or_open_to_others_is_refused(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(private))
    assert lease_server.user_dir() == private
    private.chmod(0o755)
    with pytest.raises(PermissionError, match="mode 755, expected 700"):
        lease_server.user_dir()
    private.chmod(0o700)
    monkeypatch.setattr(lease_server, "this_uid", lambda: os.getuid() + 1)
    with pytest.raises(PermissionError, match="belongs to uid .* not to this process's"):
        lease_server.user_dir()
    monkeypatch.undo()
    link = tmp_path / "link"
    link.symlink_to(private)
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(link))
    with pytest.raises(PermissionError, match="not a directory"):
        lease_server.user_dir()
    made = tmp_path / "made"  # a missing directory is made private
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(made))
    assert lease_server.user_dir() == made and made.stat().st_mode & 0o777 == 0o700


_EXPORTER = """
import sys, time, warnings
from arrowdev.cuda import lease_server
registry, server = lease_server.registry(), lease_server.server()
export = registry.add(["the memory"], hold=600.0, description="a test export")
print(server.address, export.id, flush=True)
sys.stdin.readline()   # leased by the test: exit now, with the lease live
print("exiting", flush=True)
"""


def _exporter(spawn, tmp_path, wait):
    env = {**os.environ, "ARROWDEV_RUNTIME_DIR": str(tmp_path), "ARROWDEV_IPC_EXIT_WAIT": str(wait)}
    child = spawn(_EXPORTER, env=env)
    address, export_id = child.stdout.readline().split()
    return child, address, export_id


def test_an_exporter_exiting_with_live_leases_waits_then_names_what_it_breaks(tmp_path_factory, spawn):
    directory = tmp_path_factory.mktemp("exiting")
    directory.chmod(0o700)
    child, address, export_id = _exporter(spawn, directory, 0.5)
    lease = lease_client.lease(address, export_id, child.pid)
    assert Children.ask(child, "go") == "exiting"
    start = time.monotonic()
    _, err = child.communicate(timeout=60)
    assert time.monotonic() - start >= 0.4  # it waited for the lease
    assert "BrokenLeaseWarning" in err and f"held by pid(s) {os.getpid()}" in err and "a test export" in err
    assert "set_exit_wait" in err
    wait_for(lambda: lease_client.stats()["leases_broken"] == 1, 1.0)
    with pytest.raises(InvalidArrowError, match="did not answer|has gone"):
        lease_client.lease(address, export_id, child.pid)  # the next import from a gone exporter
    lease.release()
    assert lease_client.stats()["leases_held"] == 0


def test_the_next_lease_reuses_the_idle_connection_and_the_lease_is_back_meanwhile(server, kept):
    owner = Owner()
    export = server.registry.add(kept(), owner=owner)
    for _ in range(3):
        lease = lease_client.lease(server.address, export.id, os.getpid())
        assert server.registry.stats()["leases_granted"] == 1 and server.peers() == 1
        lease.release()  # RELEASE sent: the connection no longer gives the lease back by closing
        wait_for(lambda: server.registry.stats()["leases_granted"] == 0, 1.0)
        assert server.peers() == 1 and lease_client.stats() == {"leases_held": 0, "exporters": 0, "leases_broken": 0}


def test_an_idle_connection_to_an_exporter_that_has_gone_is_replaced(tmp_path_factory, spawn):
    directory = tmp_path_factory.mktemp("idle")
    directory.chmod(0o700)
    child, address, export_id = _exporter(spawn, directory, 30)
    lease_client.lease(address, export_id, child.pid).release()  # the connection kept, idle
    assert Children.ask(child, "go") == "exiting"
    child.communicate(timeout=60)
    with pytest.raises(InvalidArrowError, match="has gone"):
        lease_client.lease(address, export_id, child.pid)


def test_an_exporter_exits_as_soon_as_the_last_lease_is_released(tmp_path_factory, spawn):
    directory = tmp_path_factory.mktemp("released")
    directory.chmod(0o700)
    child, address, export_id = _exporter(spawn, directory, 30)
    lease = lease_client.lease(address, export_id, child.pid)
    assert Children.ask(child, "go") == "exiting"
    time.sleep(0.2)
    assert child.poll() is None  # waiting for the lease
    start = time.monotonic()
    lease.release()
    _, err = child.communicate(timeout=60)
    assert time.monotonic() - start < 5 and "BrokenLeaseWarning" not in err and child.returncode == 0
    assert not list(directory.glob("leases/*.sock"))  # its socket file is gone with it


def test_the_exit_wait_is_settable(monkeypatch):
    monkeypatch.setenv("ARROWDEV_IPC_EXIT_WAIT", "2.5")
    assert lease_server.exit_wait() == 2.5
    lease_server.set_exit_wait(0)
    try:
        assert lease_server.exit_wait() == 0
    finally:
        lease_server.set_exit_wait(None)
    with pytest.raises(ValueError, match="expected a number of seconds >= 0"):
        lease_server.set_exit_wait(-1)
