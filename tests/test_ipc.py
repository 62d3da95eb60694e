"""CUDA IPC between processes: export_ipc / import_ipc of tables and columns of every type, stale and foreign
handles refused, the GPU found by UUID under another index."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

import arrowdev as ad
from support.samples import with_ipc_header
from support.scripts import run_script


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
    magic = b"ARROWDEV-CUDA-IPC-1\n"
    size = int.from_bytes(data[len(magic):len(magic) + 8], "little")
    header = json.loads(data[len(magic) + 8:len(magic) + 8 + size])
    n_buffers = sum(1 for b in ad.table(g).to_device().columns for info in b.buffers if info.address)
    # one handle per device allocation, however many buffers lie in it (how many share one depends on the
    # pool's state: blocks freed by earlier tests are carved up again)
    assert 0 < len(header["handles"]) <= n_buffers and len(set(header["handles"])) == len(header["handles"])
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
