"""CUDA IPC mappings kept open, idle, for the next import of the same allocation (arrowdev/cuda/ipc_mappings.py):
counted users, a bounded idle time and count, failed imports closing what they mapped; the same through
export_ipc / import_ipc between real processes over fake handles (tests/support/fake_ipc.py). With real GPU
memory: tests/test_ipc.py (gpu)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.cuda import ipc_mappings
from support import fake_ipc
from support.scripts import Children, wait_for


class Handles:
    """Stand-in CUDA calls (open, size, close): counts what was opened and closed, and refuses to open a handle
    twice."""

    def __init__(self) -> None:
        self.opened: dict[int, str] = {}
        self.closed: list[str] = []
        self.next_base = 0x1000
        self.lock = threading.Lock()

    def open_handle(self, handle: bytes, device_id: int) -> int:
        with self.lock:
            assert handle.hex() not in self.opened.values(), "a handle opened twice (CUDA refuses it)"
            self.next_base += 0x1000
            self.opened[self.next_base] = handle.hex()
            return self.next_base

    def allocation(self, base: int) -> tuple[int, int]:
        return base, 64

    def close_handle(self, base: int, device_id: int) -> None:
        with self.lock:
            self.closed.append(self.opened.pop(base))

    def acquire(self, handle: str) -> ipc_mappings.Mapping:
        return ipc_mappings.acquire(handle, 0, self)


@pytest.fixture
def handles(monkeypatch):
    ipc_mappings.close_idle()
    monkeypatch.setattr(ipc_mappings, "IDLE_SECONDS", 30.0)
    made = Handles()
    yield made
    ipc_mappings.close_idle()


def test_a_mapping_is_shared_by_its_users_and_kept_idle_after_the_last(handles):
    first, second = handles.acquire("aa"), handles.acquire("aa")
    assert first is second and first.users == 2 and len(handles.opened) == 1 and first.mapped_size == 64
    ipc_mappings.release([first])
    assert ipc_mappings.stats() == {"mappings_open": 1, "mappings_idle": 0}  # one user left
    ipc_mappings.release([second])
    assert ipc_mappings.stats() == {"mappings_open": 1, "mappings_idle": 1} and not handles.closed
    again = handles.acquire("aa")  # the next import of the allocation: nothing opened
    assert again is first and again.base == first.base and len(handles.opened) == 1
    assert ipc_mappings.stats()["mappings_idle"] == 0
    ipc_mappings.release([again])
    ipc_mappings.close_idle()
    assert handles.closed == ["aa"] and ipc_mappings.stats() == {"mappings_open": 0, "mappings_idle": 0}


def test_idle_mappings_close_when_their_time_runs_out(handles, monkeypatch):
    monkeypatch.setattr(ipc_mappings, "IDLE_SECONDS", 0.05)
    ipc_mappings.release([handles.acquire("aa"), handles.acquire("bb")])
    assert len(handles.opened) == 2
    took = wait_for(lambda: ipc_mappings.stats()["mappings_open"] == 0, seconds=2.0)
    assert sorted(handles.closed) == ["aa", "bb"] and took >= 0.02  # closed by the thread, not at release
    fresh = handles.acquire("aa")  # a closed mapping is opened again
    assert len(handles.opened) == 1 and fresh.users == 1
    ipc_mappings.release([fresh], keep=False)


def test_no_idle_time_closes_at_the_last_release(handles, monkeypatch):
    monkeypatch.setattr(ipc_mappings, "IDLE_SECONDS", 0)
    one = handles.acquire("aa")
    ipc_mappings.release([one])
    assert handles.closed == ["aa"] and ipc_mappings.stats()["mappings_open"] == 0


def test_a_failed_import_closes_what_it_mapped(handles):
    ipc_mappings.release([handles.acquire("aa")], keep=False)
    assert handles.closed == ["aa"] and ipc_mappings.stats()["mappings_open"] == 0


def test_only_the_mappings_used_last_are_kept(handles, monkeypatch):
    monkeypatch.setattr(ipc_mappings, "IDLE_KEPT", 2)
    for handle in ("aa", "bb", "cc"):
        ipc_mappings.release([handles.acquire(handle)])
    assert handles.closed == ["aa"] and ipc_mappings.stats() == {"mappings_open": 2, "mappings_idle": 2}


def test_threads_acquiring_and_releasing_one_handle_open_it_once(handles):
    def work() -> None:
        for _ in range(200):
            ipc_mappings.release([handles.acquire("aa")])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not handles.closed and len(handles.opened) == 1
    assert ipc_mappings.stats() == {"mappings_open": 1, "mappings_idle": 1}


def test_a_finalizer_releasing_another_mapping_during_a_close_does_not_deadlock(handles, monkeypatch):
    """Closing a mapping can run the garbage collector, whose finalizers release other imports on the same thread:
    the lock must let that thread in again."""
    monkeypatch.setattr(ipc_mappings, "IDLE_SECONDS", 0)
    other = handles.acquire("bb")
    close = handles.close_handle

    def close_and_finalize(base: int, device_id: int) -> None:
        close(base, device_id)
        if other.users:
            ipc_mappings.release([other])  # what an _Imported's __del__ does

    handles.close_handle = close_and_finalize
    worker = threading.Thread(target=lambda: ipc_mappings.release([handles.acquire("aa")]), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "deadlocked"
    assert sorted(handles.closed) == ["aa", "bb"] and ipc_mappings.stats()["mappings_open"] == 0


_IMPORT_TWICE = """
import arrowdev as ad
data = open(sys.argv[1], "rb").read()
got = ad.import_ipc(data)
opened = len(fake.opened)
del got
idle = ad.cuda.lease_stats()
again = ad.import_ipc(data)
print(opened, len(fake.opened), fake.closed, idle["mappings_idle"], idle["leases_held"],
      ad.cuda.lease_stats()["leases_held"], len(again), flush=True)
sys.stdin.readline()
del again
from arrowdev.cuda import ipc_mappings
ipc_mappings.close_idle()
print(len(fake.opened), fake.closed, flush=True)
sys.stdin.readline()
"""


def test_an_importer_maps_an_allocation_once_for_imports_one_after_the_other(monkeypatch, tmp_path):
    """The second import of the same export, after the first was dropped, takes a lease again but maps nothing:
    the mapping was kept idle (values are checked on a GPU: the fake maps zeros)."""
    fake = fake_ipc.install(monkeypatch)
    col = fake_ipc.device_column(fake, pa.array([1.5, 2.5, 3.5, 4.0]))
    (tmp_path / "h").write_bytes(col.export_ipc())
    with Children(fake_ipc.CHILD_PRELUDE) as children:
        importer = children.start(_IMPORT_TWICE, str(tmp_path / "h"))
        assert Children.ask(importer) == "1 1 0 1 0 1 4"  # one mapping, kept idle, reused; leases as before
        assert Children.ask(importer, "close") == "0 1"
        Children.finish(importer)
    wait_for(lambda: ad.cuda.lease_stats()["leases_granted"] == 0)
