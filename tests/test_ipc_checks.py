"""CUDA IPC descriptions are checked like received frames (issue 30; arrowdev/cuda/ipc_checks.py): every node against
its type and the allocations' sizes before any lease is taken or handle opened, each mapping's size against the
header's and the values in the buffers before anything reads them. Without a GPU these run over the fake CUDA
calls (tests/support/fake_ipc.py), the import in the exporting process itself (its buffers are the exporter's own,
so their values are real: the values are checked on the host here, on the GPU there). The GPU tests export real
device memory and import it in another process."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.core.value_checks import HostValues
from arrowdev.cuda import ipc
from support import fake_ipc
from support.samples import CASES, with_ipc_header
from support.scripts import run_script

# what fake_ipc.device_column makes (a node over a PyArrow array's buffers(); view arrays' variadic sizes are not
# among those)
FLAT = sorted(name for name, arr in CASES.items() if arr.type.num_fields == 0 and not pa.types.is_dictionary(arr.type)
              and name not in ("null", "string_view", "binary_view"))


@pytest.fixture
def fake(monkeypatch, tmp_path_factory):
    """The fake CUDA calls (values checked on the host: an import in the exporting process reads its buffers)."""
    directory = tmp_path_factory.mktemp("run")
    directory.chmod(0o700)
    monkeypatch.setenv("ARROWDEV_RUNTIME_DIR", str(directory))
    calls = fake_ipc.install(monkeypatch)
    monkeypatch.setattr(calls, "value_checks", lambda frames, device_id: HostValues(), raising=False)
    return calls


def _header(data: bytes) -> dict:
    magic = data[:data.index(b"\n") + 1]
    size = int.from_bytes(data[len(magic):len(magic) + 8], "little")
    return json.loads(data[len(magic) + 8:len(magic) + 8 + size])


def _refused(data: bytes, *patterns: str) -> str:
    with pytest.raises(ad.InvalidArrowError) as caught:
        ad.import_ipc(data)
    for pattern in patterns:
        assert pattern in str(caught.value), caught.value
    return str(caught.value)


@pytest.mark.parametrize("name", FLAT)
def test_every_flat_type_passes_the_checks_and_imports(fake, name):
    col = fake_ipc.device_column(fake, CASES[name])
    got = ad.import_ipc(col.export_ipc())
    assert got.device.type == "cuda" and len(got) == len(col)


def test_an_allocation_smaller_than_its_buffer_needs_is_refused_before_any_lease(fake):
    col = fake_ipc.device_column(fake, pa.array(["hello", None, "x"]))
    data = col.export_ipc()
    handles = _header(data)["handles"]
    smaller = [{**h, "size": 1} for h in handles]
    granted = ad.cuda.lease_stats()["leases_granted"]
    _refused(with_ipc_header(data, handles=smaller), "chunks[0]", "handle", "at least", "bytes")
    assert ad.cuda.lease_stats()["leases_granted"] == granted


@pytest.mark.parametrize("field, value, pattern", [
    ("length", 5, "at least 40 bytes"), ("length", -1, "a length"), ("offset", 1, "at least 40 bytes"),
    ("null_count", 5, "null count"), ("buffers", [None], "buffer entries"),
    ("children", [{}], "children"), ("dictionary", {}, "dictionary"),
])
def test_node_fields_that_do_not_fit_are_refused_before_any_lease(fake, field, value, pattern):
    col = fake_ipc.device_column(fake, pa.array([1.5, None, 2.5, 4.0]))
    data = col.export_ipc()
    node = _header(data)["chunks"][0]
    node[field] = value
    granted = ad.cuda.lease_stats()["leases_granted"]
    _refused(with_ipc_header(data, chunks=[node]), "chunks[0]", pattern)
    assert ad.cuda.lease_stats()["leases_granted"] == granted


def test_a_node_without_its_fields_is_refused(fake):
    col = fake_ipc.device_column(fake, pa.array([1.5, None]))
    data = col.export_ipc()
    node = _header(data)["chunks"][0]
    del node["offset"]
    _refused(with_ipc_header(data, chunks=[node]), "chunks[0]", "offset")


def test_another_type_over_the_same_buffers_is_refused(fake):
    col = fake_ipc.device_column(fake, pa.array([1, 2, 3], pa.int32()))
    data = col.export_ipc()
    magic = data[:data.index(b"\n") + 1]
    size = int.from_bytes(data[len(magic):len(magic) + 8], "little")
    wider = pa.schema([pa.field("", pa.int64())]).serialize().to_pybytes()
    _refused(data[:len(magic) + 8 + size] + wider, "at least 24 bytes", "got 12")
    _refused(data[:len(magic) + 8 + size] + b"\xff\xff\xff\xff\x10\x00\x00\x00garbage", "schema")


def test_a_mapping_of_another_size_than_the_header_says_is_refused(fake):
    """The header's size fits the nodes but not the allocation the handle maps: refused once mapped, before any
    read."""
    col = fake_ipc.device_column(fake, pa.array([1.5, None, 2.5, 4.0]))
    data = col.export_ipc()
    handles = _header(data)["handles"]
    larger = [{**h, "size": h["size"] + 64} for h in handles]
    _refused(with_ipc_header(data, handles=larger), "handles[", "the header's size", "mapped")


def test_bad_values_in_the_buffers_are_refused_once_mapped(fake):
    """Offsets past the data and a null count the bitmap does not have, in the exporter's memory: refused after
    mapping, before anything reads them (here on the host; CuPy on a GPU)."""
    values = pa.array(["ab", "cde", None])
    col = fake_ipc.device_column(fake, values)
    data = col.export_ipc()
    offsets = np.frombuffer(values.buffers()[1], np.int32)
    saved = offsets.copy()
    np.copyto(offsets, np.array([0, 2, 10**6, 10**6], np.int32), casting="unsafe")
    try:
        _refused(data, "chunks[0].buffers[")  # the data too short for the last offset, or the offsets
    finally:
        np.copyto(offsets, saved, casting="unsafe")
    node = _header(data)["chunks"][0]
    node["null_count"] = 0
    _refused(with_ipc_header(data, chunks=[node]), "null count")
    assert len(ad.import_ipc(data)) == 3  # the values put back: accepted


@pytest.mark.parametrize("values, wanted", [(pa.array([1.5, 2.5]), False), (pa.array([1.5, None]), True),
                                            (pa.array(["ab", "c"]), True),
                                            (pa.array([b"ab", b"c"], pa.large_binary()), True)])
def test_only_descriptions_with_values_to_check_are_walked_again_once_mapped(fake, values, wanted):
    """The walk before mapping says whether any value inside the buffers waits to be checked (a null count against
    its bitmap, offsets): numbers without nulls need no second walk once mapped."""
    header, schema = ipc.parse_handle(fake_ipc.device_column(fake, values).export_ipc())
    assert ipc.ipc_checks.check_before_mapping(header, schema)[4] is wanted


def test_a_description_from_another_host_is_refused(fake):
    col = fake_ipc.device_column(fake, pa.array([1.5]))
    _refused(with_ipc_header(col.export_ipc(), host="elsewhere"), "another node")


def test_the_refusals_name_handles_not_frames(fake):
    col = fake_ipc.device_column(fake, pa.array([1.5, None]))
    data = col.export_ipc()
    message = _refused(with_ipc_header(data, handles=[{**h, "size": 1} for h in _header(data)["handles"]]))
    assert "handle 0 at offset 0" in message or "handle 1 at offset 0" in message
    assert "frame" not in message


# ---- on a GPU: mapped memory in another process --------------------------------------------------------------


_IMPORT_IN_A_CHILD = """
    import sys, arrowdev as ad
    try:
        got = ad.import_ipc(open(sys.argv[1], "rb").read())
    except ad.InvalidArrowError as e:
        print("refused:", e)
    else:
        print("accepted:", got.to_pylist())
"""


@pytest.mark.gpu
def test_gpu_mapped_sizes_that_disagree_with_the_header_are_refused(tmp_path):
    g = ad.column(pa.array([1, None, 3])).to_device()
    data = g.export_ipc()
    larger = [{**h, "size": h["size"] * 2} for h in _header(data)["handles"]]
    (tmp_path / "h").write_bytes(with_ipc_header(data, handles=larger))
    out = run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h"))
    assert out.startswith("refused:") and "mapped" in out, out
    (tmp_path / "h").write_bytes(data)
    assert run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h")).strip() == "accepted: [1, None, 3]"


@pytest.mark.gpu
def test_gpu_bad_offsets_in_device_memory_are_refused_on_the_gpu(tmp_path):
    """The values are checked on the GPU after mapping, before anything reads them: offsets past the data, written
    into the exporter's device buffer after the export."""
    import cupy

    g = ad.column(pa.array(["ab", "cde", None])).to_device()
    (tmp_path / "h").write_bytes(g.export_ipc())
    offsets = next(b for b in g.buffers if b.role == "offsets")
    view = cupy.ndarray(4, cupy.int32, cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(offsets.address, 16, g), 0))
    view[2] = 10**6
    cupy.cuda.runtime.deviceSynchronize()
    out = run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h"))
    assert out.startswith("refused:") and "offsets" in out, out


def test_the_ipc_module_uses_the_checks():
    assert ipc.ipc_checks.check_before_mapping and hasattr(ipc.calls, "value_checks")
