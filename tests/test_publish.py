"""CUDA IPC's leases as arrowdev wires them, without a GPU: export_ipc / import_ipc and publish / get over
fake handles (tests/support/fake_ipc.py) between real processes. Every import, repeated imports of one
handle, slices and re-exports inside an importer take leases on the exporter; the exporter's memory is
kept (counted in bytes_lent) until the last is released; names are private to a user and a namespace.
The same with real GPU memory: tests/test_ipc.py (gpu)."""

from __future__ import annotations

import os
import signal
import time

import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.cuda import ipc, lease_server
from support import fake_ipc
from support.samples import with_ipc_header
from support.scripts import Children, wait_for

VALUES = pa.array([1.5, None, 2.5, 4.0])
NO_NULLS = pa.array([1.5, 2.5, 3.5, 4.0])  # its slices' null counts need no read of device memory


@pytest.fixture
def fake(monkeypatch, tmp_path_factory):
    """The fake CUDA calls, and a private runtime directory of this test's own (names, child processes)."""
    directory = tmp_path_factory.mktemp("run")
    directory.chmod(0o700)
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(directory))
    return fake_ipc.install(monkeypatch)


@pytest.fixture
def child():
    """Starts children that use the fake (each runs its script, answering commands from stdin)."""
    with Children(fake_ipc.CHILD_PRELUDE) as children:
        yield children.start


ask, finish = Children.ask, Children.finish


def lent():
    return ad.cuda.memory_stats()["bytes_lent"]


_HOLDER = """
import arrowdev as ad
held = [ad.import_ipc(open(sys.argv[1], "rb").read())]
print(len(held[0]), held[0].device.type, flush=True)
sys.stdin.readline()
"""


def test_an_importer_keeps_the_memory_after_the_exporter_drops_its_column(fake, child, tmp_path, balanced):
    col = fake_ipc.device_column(fake, VALUES)
    (tmp_path / "h").write_bytes(col.export_ipc())
    before = lent()
    holder = child(_HOLDER, str(tmp_path / "h"))
    assert ask(holder) == "4 cuda"
    stats = ad.cuda.lease_stats()
    assert stats["leases_granted"] == 1 and stats["importers"] == 1
    del col  # the exporter lets go first: its buffers are lent, not freed
    pinned = sum(size for size, _ in fake.allocations.values())
    assert lent() - before == pinned and ad.cuda.lease_stats()["exports_lent"] == 1
    finish(holder)
    wait_for(lambda: ad.cuda.lease_stats()["leases_granted"] == 0)
    assert lent() == before and ad.cuda.lease_stats()["exports_lent"] == 0


_REEXPORTER = """
import pyarrow as pa
import arrowdev as ad
data = open(sys.argv[1], "rb").read()
first, second = ad.import_ipc(data), ad.import_ipc(data)   # one handle imported twice: two leases
piece = first[1:3]                                        # a slice keeps the first import's lease
del first
mine = fake_ipc.device_column(fake, pa.array([7.0, 8.0]))  # memory of this process
both = ad.table({"theirs": piece, "mine": mine})
open(sys.argv[2], "wb").write(both.export_ipc())          # a re-export naming both exporters' leases
print(ad.cuda.lease_stats()["leases_held"], len(fake.opened), flush=True)
sys.stdin.readline()
before = fake.synchronized
del piece, second, both
print(fake.synchronized - before, len(fake.opened), flush=True)
sys.stdin.readline()
"""

_READER = """
import json
import arrowdev as ad
from arrowdev.cuda import ipc
data = open(sys.argv[1], "rb").read()
got = ad.import_ipc(data)
header, _ = ipc.parse_handle(data)
print(json.dumps([got.num_rows, sorted(t["pid"] for t in header["leases"])]), flush=True)
sys.stdin.readline()
"""


def test_repeated_imports_slices_and_reexports_are_all_leased_from_the_exporter(fake, child, tmp_path, balanced):
    col = fake_ipc.device_column(fake, NO_NULLS)
    (tmp_path / "h").write_bytes(col.export_ipc())
    middle = child(_REEXPORTER, str(tmp_path / "h"), str(tmp_path / "again"))
    assert ask(middle) == "2 1"  # two leases held; the one allocation mapped once for both imports
    assert ad.cuda.lease_stats()["leases_granted"] == 2
    last = child(_READER, str(tmp_path / "again"))
    # the re-export leases each part where its memory lives: here, and in the middle process
    assert ask(last) == f"[2, {sorted([os.getpid(), middle.pid])}]"
    wait_for(lambda: ad.cuda.lease_stats()["leases_granted"] == 3)
    assert ad.cuda.lease_stats()["importers"] == 2
    del col
    assert ad.cuda.lease_stats()["exports_lent"] == 1
    # the middle drops everything: the second import goes (after waiting for its device work); the first
    # stays, held by the middle's own export of the mixed table, which the last process still leases
    assert ask(middle, "drop") == "1 1"
    wait_for(lambda: ad.cuda.lease_stats()["leases_granted"] == 2)
    assert ad.cuda.lease_stats()["exports_lent"] == 1
    finish(last)  # its leases end here and in the middle, whose export ends and lets its import go
    wait_for(lambda: ad.cuda.lease_stats()["exports_lent"] == 0)
    assert ad.cuda.lease_stats()["leases_granted"] == 0
    assert "BrokenLeaseWarning" not in finish(middle)  # its own export's importer had gone first


def test_an_import_in_the_exporting_process_uses_its_own_buffers(fake, balanced):
    col = fake_ipc.device_column(fake, VALUES)
    handle = col.export_ipc()
    assert col.export_ipc() == handle  # a second export of the same object: the same export
    again = ad.import_ipc(handle)
    assert [b.address for b in again.buffers] == [b.address for b in col.buffers]
    assert not fake.opened and ad.cuda.lease_stats()["leases_granted"] == 1  # no CUDA IPC, a local lease
    del col
    assert ad.cuda.lease_stats()["exports_lent"] == 1
    del again
    assert ad.cuda.lease_stats()["leases_granted"] == 0 and ad.cuda.lease_stats()["exports_lent"] == 0


_SELF_IMPORTER = """
import time, pyarrow as pa, arrowdev as ad
col = fake_ipc.device_column(fake, pa.array([1.0, 2.0]))
again = ad.import_ipc(col.export_ipc())   # a lease this process holds on its own export
print(ad.cuda.lease_stats()["leases_granted"], flush=True)
sys.stdin.readline()
"""


def test_leases_a_process_holds_on_its_own_exports_do_not_hold_up_its_exit(fake, child, monkeypatch):
    monkeypatch.setenv("ARROWDEV_IPC_EXIT_WAIT", "30")
    process = child(_SELF_IMPORTER)
    assert ask(process) == "1"
    start = time.monotonic()
    err = finish(process)
    assert time.monotonic() - start < 10 and "BrokenLeaseWarning" not in err and process.returncode == 0


def test_a_handle_whose_export_ended_is_refused_and_hold_keeps_it_open(fake, balanced):
    col = fake_ipc.device_column(fake, VALUES)
    handle = col.export_ipc()
    del col  # no importer came: the export ends, the memory is the pool's again
    with pytest.raises(ad.InvalidArrowError, match="has ended: its exporting object was dropped"):
        ad.import_ipc(handle)
    col = fake_ipc.device_column(fake, VALUES)
    handle = col.export_ipc(hold=0.5)
    del col
    assert len(ad.import_ipc(handle)) == 4  # within the window
    time.sleep(0.6)
    with pytest.raises(ad.InvalidArrowError, match="has ended"):
        ad.import_ipc(handle)
    with pytest.raises(ValueError, match="expected hold to be a number of seconds"):
        fake_ipc.device_column(fake, VALUES).export_ipc(hold=-1)


_REFUSED = """
import arrowdev as ad
from arrowdev.cuda import lease_client
try:
    ad.import_ipc(open(sys.argv[1], "rb").read())
    print("imported", flush=True)
except ad.InvalidArrowError as e:
    print(type(e).__name__, "has ended" in str(e), len(fake.opened), fake.closed, lease_client.stats()["leases_held"],
          flush=True)
sys.stdin.readline()
"""


def test_another_process_maps_while_its_lease_is_asked_for_and_unmaps_when_refused(fake, child, tmp_path, balanced):
    """import_ipc maps the allocations while the exporter answers the lease request (a round trip less); a
    refused lease (the export ended) raises the lease's error, and the mapping made meanwhile is closed."""
    col = fake_ipc.device_column(fake, VALUES)
    (tmp_path / "h").write_bytes(col.export_ipc())
    del col  # no importer came: the export ends
    importer = child(_REFUSED, str(tmp_path / "h"))
    assert ask(importer) == "InvalidArrowError True 0 2 0"  # refused; both mappings (bitmap, values) closed; no lease
    finish(importer)
    col = fake_ipc.device_column(fake, VALUES)
    (tmp_path / "h").write_bytes(col.export_ipc())
    holder = child(_HOLDER, str(tmp_path / "h"))
    assert ask(holder) == "4 cuda" and ad.cuda.lease_stats()["leases_granted"] == 1
    finish(holder)
    del col
    # the lease server sees the holder's exit on its own thread: the export (and its column) end after that
    wait_for(lambda: ad.cuda.lease_stats()["leases_granted"] == 0 and ad.cuda.lease_stats()["exports_lent"] == 0)


@pytest.mark.parametrize("change, message", [
    ({"kind": "frame"}, "kind 'table' or 'column'"),
    ({"leases": []}, "no lease to take"),
    ({"leases": [{"address": "/x", "export": "a/b", "pid": 1}]}, "a lease should be"),
    ({"handles": [{"handle": "zz" * 64, "size": 8}]}, "not hex"),
    ({"handles": [{"handle": "00" * 64, "size": -1}]}, "a handle should be"),
    ({"pid": "1"}, "pid should be a int"),
])
def test_malformed_handles_are_refused_before_anything_is_touched(fake, change, message):
    col = fake_ipc.device_column(fake, VALUES)
    with pytest.raises(ad.InvalidArrowError, match=message):
        ad.import_ipc(with_ipc_header(col.export_ipc(), **change))
    assert ad.cuda.lease_stats()["leases_granted"] == 0


def test_buffers_outside_their_allocation_are_refused(fake):
    col = fake_ipc.device_column(fake, VALUES)
    handle = col.export_ipc()
    header, _ = ipc.parse_handle(handle)
    node = header["chunks"][0]
    node["buffers"][1] = [0, 1 << 40]
    with pytest.raises(ad.InvalidArrowError, match="buffers inside the 2 allocations"):
        ad.import_ipc(with_ipc_header(handle, chunks=[node]))
    assert ad.cuda.lease_stats()["leases_granted"] == 0  # refused before any lease is taken
    with pytest.raises(ad.InvalidArrowError, match="without leases"):
        ad.import_ipc(b"ARROWDEV-CUDA-IPC-1\n" + handle[len(b"ARROWDEV-CUDA-IPC-2\n"):])


# ---- publish / get ---------------------------------------------------------------------------------------

_GETTER = """
import arrowdev as ad
got = ad.cuda.get(sys.argv[1], namespace=sys.argv[2], take=sys.argv[3] == "take", wait=5)
print(len(got), ad.cuda.lease_stats()["leases_held"], flush=True)
sys.stdin.readline()
"""


def test_a_published_table_is_got_by_name_in_another_process(fake, child, balanced):
    col = fake_ipc.device_column(fake, VALUES)
    ad.cuda.publish("prices", col, namespace="job1")
    assert ad.cuda.names("job1") == ["prices"] and ad.cuda.get("prices", namespace="job1") is col
    getter = child(_GETTER, "prices", "job1", "get")
    assert ask(getter) == "4 1"
    with pytest.raises(ValueError, match="already published by this process"):
        ad.cuda.publish("prices", col, namespace="job1")
    with pytest.raises(KeyError, match="no table is published as 'prices' in namespace 'job2'"):
        ad.cuda.get("prices", namespace="job2")
    del col
    assert ad.cuda.unpublish("prices", namespace="job1") and not ad.cuda.unpublish("prices", namespace="job1")
    assert ad.cuda.names("job1") == [] and ad.cuda.lease_stats()["exports_lent"] == 1  # the getter holds it
    finish(getter)
    wait_for(lambda: ad.cuda.lease_stats()["exports_lent"] == 0)


def test_get_with_take_hands_the_table_over(fake, child, balanced):
    ad.cuda.publish("batch-7", fake_ipc.device_column(fake, VALUES), namespace="handover")
    getter = child(_GETTER, "batch-7", "handover", "take")
    assert ask(getter) == "4 1"
    assert ad.cuda.names("handover") == []  # the publisher let go of the name and the table before get returned
    assert ad.cuda.lease_stats()["exports_lent"] == 1
    finish(getter)
    wait_for(lambda: ad.cuda.lease_stats()["exports_lent"] == 0)


_PUBLISHER = """
import pyarrow as pa, arrowdev as ad
col = fake_ipc.device_column(fake, pa.array([1, 2, 3]))
ad.cuda.publish(sys.argv[1], col, namespace=sys.argv[2])
print("published", flush=True)
sys.stdin.readline()
"""


def test_a_name_of_a_killed_publisher_is_refused_then_removed(fake, child):
    publisher = child(_PUBLISHER, "orphan", "dead")
    assert ask(publisher) == "published"
    assert ad.cuda.names("dead") == ["orphan"]
    with pytest.raises(ValueError, match="already published by process"):
        ad.cuda.publish("orphan", fake_ipc.device_column(fake, VALUES), namespace="dead")
    os.kill(publisher.pid, signal.SIGKILL)
    publisher.wait()
    with pytest.raises(ad.InvalidArrowError, match="has gone"):
        ad.cuda.get("orphan", namespace="dead")
    assert ad.cuda.names("dead") == []
    col = fake_ipc.device_column(fake, VALUES)
    ad.cuda.publish("orphan", col, namespace="dead")  # a dead publisher's name is free again
    assert ad.cuda.unpublish("orphan", namespace="dead")


def test_names_are_checked_and_private_to_their_user(fake, monkeypatch, tmp_path):
    col = fake_ipc.device_column(fake, VALUES)
    for bad in ("", "../x", "a/b", ".hidden", "x" * 201):
        with pytest.raises(ValueError, match="expected a name of letters"):
            ad.cuda.publish(bad, col)
    with pytest.raises(ValueError, match="expected a namespace"):
        ad.cuda.get("x", namespace="a b")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(shared))
    with pytest.raises(PermissionError, match="mode 777, expected 700"):
        ad.cuda.publish("x", col)
    shared.chmod(0o700)
    monkeypatch.setattr(lease_server, "this_uid", lambda: os.getuid() + 1)  # as if another user owned it
    with pytest.raises(PermissionError, match="belongs to uid"):
        ad.cuda.get("x")
