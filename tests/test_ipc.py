"""CUDA IPC between processes: export_ipc / import_ipc of tables and columns of every type, stale and foreign
handles refused, the GPU found by UUID under another index; leases (docs/memory.md): the exporter or the
importer drops first, 32 importers, an importer killed mid-use, an exporter that exits with live leases, a
handle used after its lease ended, re-exports, publish / get. The same lease rules without a GPU, over fake
handles: tests/test_leases.py, tests/test_publish.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.cuda import ipc
from support.samples import with_ipc_header
from support.scripts import Children, run_script, wait_for


def test_import_ipc_refuses_other_bytes():
    with pytest.raises(ValueError, match="export_ipc"):
        ad.import_ipc(b"not a handle")
    with pytest.raises(ValueError, match="CUDA device"):
        ad.column(pa.array([1])).export_ipc()


_TABLE = pa.table({"i": pa.chunked_array([[1, 2, None], [4]]), "s": ["a", None, "ccc", "dd"],
                   "l": [[1], [], None, [2, 3]], "d": pa.array(["x", "y", "x", None]).dictionary_encode()})

_IMPORTER = """
    import sys, json
    import arrowdev as ad
    data = open(sys.argv[1], "rb").read()
    t = ad.import_ipc(data)
    print(json.dumps({"rows": t.to_pyarrow().to_pylist(), "device": t.device.type,
                      "buffers": [b.address for b in t.column(0).buffers if b.address]}))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("drop_exporter_first", [False, True])
def test_ipc_table_seen_by_another_process(tmp_path, drop_exporter_first):
    g = ad.table(_TABLE).to_device()
    path = tmp_path / "handle"
    path.write_bytes(g.export_ipc())
    seen = json.loads(run_script(_IMPORTER, None, str(path)))
    assert seen["rows"] == _TABLE.to_pylist()
    assert seen["device"] == "cuda"
    if drop_exporter_first:
        del g  # the importer has exited and closed its mappings either way; no crash here
    column = ad.column(pa.array([1.5, None, 2.5])).to_device()[1:]
    path.write_bytes(column.export_ipc())
    out = run_script("""
        import sys, arrowdev as ad
        col = ad.import_ipc(open(sys.argv[1], "rb").read())
        print(col.to_pylist(), col.null_count, col.device.type)
    """, None, str(path))
    assert out.strip() == "[None, 2.5] 1 cuda"


@pytest.mark.gpu
def test_ipc_every_type(tmp_path):
    """A table of every sample type (tests/support/samples.py) crosses processes; the importer writes what it sees
    to an Arrow IPC file, compared here with the source. A handle per allocation, each buffer an offset
    into its allocation."""
    from support.samples import CASES

    source = pa.table({name: CASES[name] for name in CASES})
    g = ad.table(source).to_device()
    data = g.export_ipc()
    header, _ = ipc.parse_handle(data)
    handles = [h["handle"] for h in header["handles"]]
    n_buffers = sum(1 for b in ad.table(g).to_device().columns for info in b.buffers if info.address)
    # one handle per device allocation, however many buffers lie in it (how many share one depends on the
    # pool's state: blocks freed by earlier tests are carved up again)
    assert 0 < len(handles) <= n_buffers and len(set(handles)) == len(handles)
    assert [t["pid"] for t in header["leases"]] == [os.getpid()]
    (tmp_path / "handle").write_bytes(data)
    run_script("""
        import sys, pyarrow as pa, arrowdev as ad
        t = ad.import_ipc(open(sys.argv[1], "rb").read())
        assert t.device.type == "cuda"
        with pa.OSFile(sys.argv[2], "wb") as f, pa.ipc.new_file(f, t.to_pyarrow().schema) as w:
            w.write_table(t.to_pyarrow())
    """, None, str(tmp_path / "handle"), str(tmp_path / "seen.arrow"))
    seen = pa.ipc.open_file(str(tmp_path / "seen.arrow")).read_all()
    assert seen.equals(source)


@pytest.mark.gpu
def test_stale_and_foreign_handles_are_refused(tmp_path):
    path = tmp_path / "stale"
    run_script("""
        import sys, pyarrow as pa, arrowdev as ad
        g = ad.column(pa.array([1, 2, 3])).to_device()
        open(sys.argv[1], "wb").write(g.export_ipc())
    """, None, str(path))
    with pytest.raises(ad.InvalidArrowError, match="stale|cannot open"):
        ad.import_ipc(path.read_bytes())
    g = ad.column(pa.array([1, 2])).to_device()
    with pytest.raises(ad.InvalidArrowError, match="another node"):
        ad.import_ipc(with_ipc_header(g.export_ipc(), host="elsewhere"))


def _cuda_device_uuid(ordinal: int) -> bytes:
    """The 16 bytes of the UUID of CUDA's device ``ordinal`` in this process, from the driver API."""
    import ctypes

    cuda = ctypes.CDLL("libcuda.so.1")
    device, raw = ctypes.c_int(), (ctypes.c_ubyte * 16)()
    for call, args in ((cuda.cuInit, (0,)), (cuda.cuDeviceGet, (ctypes.byref(device), ordinal)),
                       (cuda.cuDeviceGetUuid_v2, (raw, device))):
        assert call(*args) == 0, f"{call.__name__} failed"
    return bytes(raw)


@pytest.mark.gpu
def test_gpu_import_ipc_finds_the_gpu_by_uuid(tmp_path):
    """The importer sees the GPU under another index (here: the only one, under CUDA_VISIBLE_DEVICES=its
    UUID, while the header says index 5): found by UUID."""
    import os
    import uuid

    import cupy

    g = ad.column(pa.array([1.5, None, 2.5])).to_device()
    (tmp_path / "h").write_bytes(with_ipc_header(g.export_ipc(), device=5))
    # the UUID of what CUDA calls device 0 here, from the driver (with CUDA_VISIBLE_DEVICES set, nvidia-smi's
    # index 0 is another GPU; CuPy's device properties cut the UUID's bytes at a zero byte: a prefix of it)
    raw = _cuda_device_uuid(0)
    assert raw.startswith(bytes(cupy.cuda.runtime.getDeviceProperties(0)["uuid"]))
    gpu = f"GPU-{uuid.UUID(bytes=raw)}"
    code = "import sys, arrowdev as ad; c = ad.import_ipc(open(sys.argv[1], 'rb').read()); print(c.to_pylist())"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h")], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "[1.5, None, 2.5]"
    with pytest.raises(ad.InvalidArrowError, match="not visible in this process"):
        ad.import_ipc(with_ipc_header(g.export_ipc(), device_uuid="00" * 16))


# ---- leases ------------------------------------------------------------------------------------------------

_HOLDER = """
    import sys, cupy, arrowdev as ad
    held = ad.import_ipc(open(sys.argv[1], "rb").read())
    print("imported", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "sum":
            print(float(cupy.asarray(held).sum()), flush=True)
        elif command == "drop":
            del held
            print("dropped", flush=True)
        elif command == "again":
            try:
                ad.import_ipc(open(sys.argv[1], "rb").read())
                print("imported again", flush=True)
            except ad.InvalidArrowError as e:
                print("InvalidArrowError", e, flush=True)
        elif command == "exit":
            break
"""

N = 10_000_000
TOTAL = str(float(N * (N - 1) // 2))  # the sum of 0, 1, ..., N - 1 (exact in float64)


def _counting(n=N):
    return ad.column(pa.array(np.arange(n, dtype=np.float64))).to_device()


def _granted():
    return ad.cuda.lease_stats()["leases_granted"]


@pytest.mark.gpu
def test_gpu_an_importer_reads_its_values_after_the_exporter_dropped_them(tmp_path):
    """The failure that leases fix: the exporter drops its column and makes new ones (reusing the pool's free
    blocks); the importer still reads 0, 1, 2, ... (it read the new columns' -1.0 before leases)."""
    before = ad.cuda.memory_stats()["bytes_in_use"]
    g = _counting()
    nbytes = ad.cuda.memory_stats()["bytes_in_use"] - before
    (tmp_path / "h").write_bytes(g.export_ipc())
    with Children() as children:
        holder = children.start(_HOLDER, str(tmp_path / "h"))
        assert children.ask(holder) == "imported" and _granted() == 1
        del g
        assert ad.cuda.memory_stats()["bytes_lent"] == nbytes and ad.cuda.lease_stats()["exports_lent"] == 1
        others = [ad.column(pa.array(np.full(N, -1.0))).to_device() for _ in range(3)]
        assert children.ask(holder, "sum") == TOTAL
        assert children.ask(holder, "drop") == "dropped"
        wait_for(lambda: _granted() == 0)
        assert ad.cuda.memory_stats()["bytes_lent"] == 0
        del others
        children.finish(holder)
    assert ad.cuda.memory_stats()["bytes_in_use"] == before


@pytest.mark.gpu
def test_gpu_an_importer_drops_first_then_the_exporter(tmp_path):
    import cupy

    before = ad.cuda.memory_stats()["bytes_in_use"]
    g = _counting()
    (tmp_path / "h").write_bytes(g.export_ipc())
    with Children() as children:
        holder = children.start(_HOLDER, str(tmp_path / "h"))
        assert children.ask(holder) == "imported"
        assert children.ask(holder, "sum") == TOTAL
        assert children.ask(holder, "drop") == "dropped"
        wait_for(lambda: _granted() == 0)
        assert ad.cuda.lease_stats()["exports_lent"] == 0 and ad.cuda.memory_stats()["bytes_lent"] == 0
        assert str(float(cupy.asarray(g).sum())) == TOTAL  # the exporter's column is untouched
        del g
        assert ad.cuda.memory_stats()["bytes_in_use"] == before
        assert children.ask(holder, "again").startswith("InvalidArrowError")  # its export ended with g
        children.finish(holder)


_TABLE_READER = """
    import sys, cupy, arrowdev as ad
    t = ad.import_ipc(open(sys.argv[1], "rb").read())
    print(float(cupy.asarray(t.column("x")).sum()), t.column("s").to_pylist()[-1], flush=True)
    sys.stdin.readline()
"""


@pytest.mark.gpu
def test_gpu_32_importers_of_one_table_some_killed(tmp_path):
    before = ad.cuda.memory_stats()["bytes_in_use"]
    n = 100_000
    tbl = ad.table({"x": pa.array(np.arange(n, dtype=np.float64)), "s": [str(i) for i in range(n)]}).to_device()
    (tmp_path / "h").write_bytes(tbl.export_ipc())
    with Children() as children:
        holders = [children.start(_TABLE_READER, str(tmp_path / "h")) for _ in range(32)]
        for holder in holders:
            assert children.ask(holder) == f"{float(n * (n - 1) // 2)} {n - 1}"
        stats = ad.cuda.lease_stats()
        assert stats["leases_granted"] == 32 and stats["importers"] == 32
        del tbl
        assert ad.cuda.lease_stats()["exports_lent"] == 1 and ad.cuda.memory_stats()["bytes_lent"] > 0
        for holder in holders[::2]:
            os.kill(holder.pid, signal.SIGKILL)
        for holder in holders[1::2]:
            children.finish(holder)
        wait_for(lambda: _granted() == 0, 10.0)
    assert ad.cuda.lease_stats()["exports_lent"] == 0 and ad.cuda.memory_stats()["bytes_lent"] == 0
    assert ad.cuda.memory_stats()["bytes_in_use"] == before


_BUSY = """
    import sys, cupy, arrowdev as ad
    x = cupy.asarray(ad.import_ipc(open(sys.argv[1], "rb").read()))
    x.sum().get()
    print("busy", flush=True)
    while True:
        x.sum()  # kernels over the exporter's memory, queued without end
"""


@pytest.mark.gpu
def test_gpu_an_importer_killed_mid_use_gives_its_lease_back(tmp_path):
    before = ad.cuda.memory_stats()["bytes_in_use"]
    g = _counting()
    (tmp_path / "h").write_bytes(g.export_ipc())
    with Children() as children:
        busy = children.start(_BUSY, str(tmp_path / "h"))
        assert children.ask(busy) == "busy"
        del g
        assert ad.cuda.memory_stats()["bytes_lent"] > 0
        time.sleep(0.2)
        killed = time.monotonic()
        os.kill(busy.pid, signal.SIGKILL)
        wait_for(lambda: _granted() == 0, 5.0)
        took = time.monotonic() - killed
        print(f"the lease came back {took:.3f} s after SIGKILL")
        assert took < 2.0
    assert ad.cuda.memory_stats()["bytes_lent"] == 0 and ad.cuda.memory_stats()["bytes_in_use"] == before


_EXPORTER = """
    import sys, pyarrow as pa, arrowdev as ad
    g = ad.column(pa.array([1.5, 2.5, 3.5])).to_device()
    open(sys.argv[1], "wb").write(g.export_ipc())
    print("exported", flush=True)
    sys.stdin.readline()
    print("exiting", flush=True)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("release_in_time", [False, True])
def test_gpu_an_exporter_exiting_with_live_leases(tmp_path, release_in_time):
    """It waits for the leases (ARROWDEV_IPC_EXIT_WAIT); released in time, it exits at once and quietly; not,
    it names the leases it breaks, and the importer's next import of it raises."""
    env = {**os.environ, "ARROWDEV_IPC_EXIT_WAIT": "30" if release_in_time else "1"}
    with Children() as children:
        exporter = children.start(_EXPORTER, str(tmp_path / "h"), env=env)
        assert children.ask(exporter) == "exported"
        col = ad.import_ipc((tmp_path / "h").read_bytes())
        assert col.to_pylist() == [1.5, 2.5, 3.5]
        assert children.ask(exporter, "go") == "exiting"
        time.sleep(0.3)
        assert exporter.poll() is None  # waiting for this process's lease
        if release_in_time:
            del col
            start = time.monotonic()
            _, err = exporter.communicate(timeout=60)
            assert time.monotonic() - start < 5 and "BrokenLeaseWarning" not in err and exporter.returncode == 0
            return
        _, err = exporter.communicate(timeout=60)
        assert "BrokenLeaseWarning" in err and f"held by pid(s) {os.getpid()}" in err
        wait_for(lambda: ad.cuda.lease_stats()["leases_broken"] == 1)
        with pytest.raises(ad.InvalidArrowError, match="has gone|did not answer"):
            ad.import_ipc((tmp_path / "h").read_bytes())
        del col  # never read again: CUDA leaves reading memory of an exited exporter undefined
    assert ad.cuda.lease_stats()["leases_held"] == 0


@pytest.mark.gpu
def test_gpu_a_handle_used_after_its_lease_ended_is_refused(tmp_path):
    g = _counting(1000)
    data = g.export_ipc()
    (tmp_path / "h").write_bytes(data)
    with Children() as children:
        holder = children.start(_HOLDER, str(tmp_path / "h"))
        assert children.ask(holder) == "imported"
        assert children.ask(holder, "drop") == "dropped"
        wait_for(lambda: _granted() == 0)
        del g  # no lease: the export ends, the memory is the pool's again
        reused = [_counting(1000) for _ in range(3)]
        answer = children.ask(holder, "again")
        assert answer.startswith("InvalidArrowError") and "has ended" in answer
        with pytest.raises(ad.InvalidArrowError, match="has ended"):
            ad.import_ipc(data)
        del reused
        children.finish(holder)


_REEXPORTER = """
    import sys, pyarrow as pa, arrowdev as ad
    t = ad.import_ipc(open(sys.argv[1], "rb").read())
    mine = ad.column(pa.array([10.0, 20.0])).to_device()
    mixed = t.slice(1, 2).append_column("mine", mine)   # imported rows and this process's own column
    open(sys.argv[2], "wb").write(mixed.export_ipc(hold=60))  # open to importers for a minute after
    del t, mixed, mine                                          # this process drops everything
    print("re-exported", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.gpu
def test_gpu_a_reexport_is_read_by_a_third_process_after_the_first_two_let_go(tmp_path):
    g = ad.table({"x": pa.array([1.0, 2.0, 3.0, 4.0]), "s": ["a", None, "ccc", "dd"]}).to_device()
    (tmp_path / "h").write_bytes(g.export_ipc())
    with Children() as children:
        middle = children.start(_REEXPORTER, str(tmp_path / "h"), str(tmp_path / "again"))
        assert children.ask(middle) == "re-exported"
        last = children.start(_TABLE_ROWS, str(tmp_path / "again"))
        del g  # the first exporter lets go: the last importer's lease keeps its rows
        want = [{"x": 2.0, "s": None, "mine": 10.0}, {"x": 3.0, "s": "ccc", "mine": 20.0}]
        assert json.loads(children.ask(last)) == want
        assert json.loads(children.ask(last, "read")) == want  # read again after the first exporter let go
        children.finish(last)
        assert "BrokenLeaseWarning" not in children.finish(middle)  # its importer had gone first
        wait_for(lambda: ad.cuda.lease_stats()["exports_lent"] == 0)  # the middle's hold ended with it


_TABLE_ROWS = """
    import sys, json, arrowdev as ad
    t = ad.import_ipc(open(sys.argv[1], "rb").read())
    print(json.dumps(t.to_pylist()), flush=True)
    for line in sys.stdin:
        if line.strip() == "read":
            print(json.dumps(t.to_pylist()), flush=True)
        else:
            break
"""

_GETTER = """
    import sys, json, arrowdev as ad
    t = ad.cuda.get(sys.argv[1], take=True, wait=30)
    print(json.dumps(t.to_pylist()), flush=True)
    sys.stdin.readline()
"""


@pytest.mark.gpu
def test_gpu_publish_and_get_between_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWDEV_NAMESPACE", f"gpu-test-{os.getpid()}")
    before = ad.cuda.memory_stats()["bytes_in_use"]
    tbl = ad.table(_TABLE).to_device()
    ad.cuda.publish("table", tbl)
    assert ad.cuda.get("table") is tbl and ad.cuda.names() == ["table"]
    with Children() as children:
        getter = children.start(_GETTER, "table")
        assert json.loads(children.ask(getter)) == _TABLE.to_pylist()
        assert ad.cuda.names() == []  # taken: the publisher let go of the name before the get returned
        del tbl
        assert ad.cuda.lease_stats()["exports_lent"] == 1
        children.finish(getter)
        wait_for(lambda: ad.cuda.lease_stats()["exports_lent"] == 0)
    assert ad.cuda.memory_stats()["bytes_in_use"] == before


_SUMS = """
    import sys
    import cupy
    import arrowdev as ad
    for line in sys.stdin:
        if line.strip() == "exit":
            break
        t = ad.import_ipc(open(line.strip(), "rb").read())
        total = float(cupy.asarray(t.column(0)).sum())
        del t
        stats = ad.cuda.lease_stats()
        print(total, stats["mappings_open"], stats["mappings_idle"], stats["leases_held"], flush=True)
"""


@pytest.mark.gpu
def test_handoffs_through_reused_and_freed_pool_blocks_read_the_new_values(tmp_path):
    """An importer keeps its mappings idle between imports (cuda/ipc_mappings.py). Tables handed over one after
    another, from blocks the exporter's pool reuses and from new allocations after the pool gave its blocks back
    to CUDA, are read with their own values each time: a kept mapping is never one of a freed allocation."""
    from arrowdev.gpu import memory

    n = 1 << 20
    path = tmp_path / "h"
    with Children() as children:
        importer = children.start(_SUMS)
        for round_, free_blocks in enumerate([False, False, True, False, True]):
            table = ad.table({"x": pa.array(np.full(n, float(round_)))}).to_device()
            path.write_bytes(table.export_ipc())
            total, mapped, idle, held = Children.ask(importer, str(path)).split()
            assert float(total) == float(round_) * n and held == "0" and mapped == idle
            assert 1 <= int(mapped) <= 1 + round_  # at most one more each round
            del table
            if free_blocks:
                memory.pool().free_all_blocks()  # the next table is a new allocation, with a new handle
        Children.finish(importer)
