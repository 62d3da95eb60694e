"""CUDA IPC descriptions are checked like received frames before any handle is mapped (issue 30;
arrowdev/serialize/ipc_checks.py): the bytes' layout, the header, every node against its type and the allocations'
sizes, the host and the exporting process. Without a GPU these run on descriptions made here of CPU columns (each
buffer an "allocation" of its own, the handles made up): a valid one gets past every check to the GPU lookup, a
broken one is refused with InvalidArrowError before anything CUDA runs. The GPU tests export real device memory
and import it in another process: mapped sizes that disagree with the header, and bad values in device buffers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev import _chunked, layout
from arrowdev.serialize import ipc_checks
from support.samples import CASES, with_ipc_header
from support.scripts import run_script

_MAGIC = ipc_checks.MAGIC


def _node(dtype: ad.DataType, tree: layout.Node, handles: list, sizes: list) -> dict:
    buffers = []
    for spec, address in zip(layout.buffer_specs(dtype, tree.offset, tree.length, tree.buffers, layout.read_cpu),
                             tree.buffers):
        if not address:
            buffers.append(None)
            continue
        buffers.append([len(handles), 0])
        handles.append(os.urandom(64).hex())
        sizes.append(spec.size)
    return {"length": tree.length, "offset": tree.offset, "null_count": tree.null_count, "buffers": buffers,
            "children": [_node(t, c, handles, sizes) for t, c in zip(dtype.children, tree.children)],
            "dictionary": None if tree.dictionary is None else _node(dtype.value_type, tree.dictionary, handles, sizes)}


def _described(data) -> tuple[dict, bytes]:
    """(header, schema bytes) of export_ipc() for a CPU column, as another process would see them."""
    col = ad.column(data)
    handles: list = []
    sizes: list = []
    chunks = [_node(col.type, layout.Node.of(held), handles, sizes) for held in _chunked.chunks(col)]
    header = {"kind": "column", "host": socket.gethostname(), "pid": os.getpid(),
              "exporter": ipc_checks.exporter_identity(), "device": 0, "device_uuid": "00" * 16,
              "handles": handles, "sizes": sizes, "chunks": chunks}
    return header, pa.schema([pa.field(col.type)]).serialize().to_pybytes()


def _bytes(header: dict, schema: bytes) -> bytes:
    encoded = json.dumps(header).encode()
    return _MAGIC + len(encoded).to_bytes(8, "little") + encoded + schema


def _past_the_checks(data: bytes) -> None:
    """import_ipc got past every check made before mapping: to the GPU lookup (no GPU here, or no GPU of that
    UUID)."""
    try:
        ad.import_ipc(data)
    except ad.DeviceUnavailableError:
        return
    except ad.InvalidArrowError as e:
        assert "not visible in this process" in str(e), e
        return
    pytest.fail("a made-up handle was imported")


def _refused(data: bytes, *patterns: str) -> str:
    with pytest.raises(ad.InvalidArrowError) as caught:
        ad.import_ipc(data)
    for pattern in patterns:
        assert pattern in str(caught.value), caught.value
    return str(caught.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_description_of_every_type_passes_the_checks_before_mapping(name):
    _past_the_checks(_bytes(*_described(CASES[name])))


@pytest.mark.parametrize("data", [b"", b"ARROWDEV", _MAGIC, _MAGIC + (10**9).to_bytes(8, "little") + b"{}",
                                  _MAGIC + (3).to_bytes(8, "little") + b"{x}", "text", None])
def test_bytes_that_are_not_a_description_are_refused(data):
    _refused(data)


@pytest.mark.parametrize("change", [
    {"kind": "tables"}, {"host": 5}, {"pid": "1"}, {"device_uuid": None}, {"handles": ["00"]},
    {"handles": "x"}, {"sizes": []}, {"sizes": None}, {"chunks": None}, {"device": "0"},
])
def test_malformed_header_fields_are_refused(change):
    header, schema = _described(pa.array([1, None, 3]))
    header.update(change)
    _refused(_bytes(header, schema))


def test_an_allocation_smaller_than_its_buffer_needs_is_refused():
    header, schema = _described(pa.array(["hello", None, "x"]))
    header["sizes"] = [size - 1 for size in header["sizes"]]
    _refused(_bytes(header, schema), "chunks[0]", "handle", "at least", "bytes")


def test_a_buffer_past_its_allocation_is_refused():
    header, schema = _described(pa.array([1, None, 3]))
    header["chunks"][0]["buffers"][1] = [1, 10**6]
    _refused(_bytes(header, schema), "inside the", "allocations")
    header["chunks"][0]["buffers"][1] = [7, 0]
    _refused(_bytes(header, schema), "handle 7")


@pytest.mark.parametrize("field, value", [("length", 4), ("length", -1), ("offset", 1), ("null_count", 5),
                                          ("buffers", [None]), ("children", [{}]), ("dictionary", {})])
def test_node_fields_that_do_not_fit_are_refused(field, value):
    header, schema = _described(pa.array([1, None, 3]))
    header["chunks"][0][field] = value
    _refused(_bytes(header, schema), "chunks[0]")


def test_a_node_without_its_fields_is_refused():
    header, schema = _described(pa.array([1, None, 3]))
    del header["chunks"][0]["offset"]
    _refused(_bytes(header, schema), "chunks[0]", "offset")


def test_a_schema_that_is_not_one_is_refused():
    header, _ = _described(pa.array([1, None, 3]))
    _refused(_bytes(header, b"\xff\xff\xff\xff\x10\x00\x00\x00garbage"), "schema")
    other = pa.schema([pa.field("x", pa.int64()), pa.field("y", pa.int64())]).serialize().to_pybytes()
    _refused(_bytes(header, other), "schema", "one field")


def test_another_type_over_the_same_buffers_is_refused():
    header, schema = _described(pa.array([1, None, 3], pa.int32()))
    wider = pa.schema([pa.field("", pa.int64())]).serialize().to_pybytes()
    _refused(_bytes(header, wider), "at least 24 bytes", "got 12")


def test_a_description_from_another_host_is_refused_before_mapping():
    header, schema = _described(pa.array([1, None, 3]))
    header["host"] = "elsewhere"
    _refused(_bytes(header, schema), "this node", "'elsewhere'")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the exporter's identity is read from /proc (Linux)")
def test_a_description_whose_exporter_has_exited_is_refused_before_mapping():
    """Its memory went with it: the handles are not opened (a process that has exited, or its pid taken by
    another process since)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    header, schema = _described(pa.array([1, None, 3]))
    header["pid"] = int(child.stdout)
    _refused(_bytes(header, schema), "exporting process", "exited")
    header, schema = _described(pa.array([1, None, 3]))
    header["exporter"]["started"] += 1  # this process's pid, another start time: a reused pid
    _refused(_bytes(header, schema), "exporting process", "another process")


def test_an_export_of_an_older_arrowdev_without_the_exporters_identity_is_checked_without_it():
    header, schema = _described(pa.array([1, None, 3]))
    del header["exporter"]
    _past_the_checks(_bytes(header, schema))


# ---- on a GPU: mapped memory ---------------------------------------------------------------------------------


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
    header = json.loads(data[len(_MAGIC) + 8:len(_MAGIC) + 8 + int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 8],
                                                                                 "little")])
    (tmp_path / "h").write_bytes(with_ipc_header(data, sizes=[n * 2 for n in header["sizes"]]))
    out = run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h"))
    assert out.startswith("refused:") and "mapped" in out, out
    (tmp_path / "h").write_bytes(data)
    assert run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h")).strip() == "accepted: [1, None, 3]"


@pytest.mark.gpu
def test_gpu_bad_offsets_in_device_memory_are_refused_on_the_gpu(tmp_path):
    """The values are checked after mapping, before anything reads them: offsets past the data, written into the
    exporter's device buffer after the export."""
    import cupy

    g = ad.column(pa.array(["ab", "cde", None])).to_device()
    (tmp_path / "h").write_bytes(g.export_ipc())
    offsets = next(b for b in g.buffers if b.role == "offsets")
    view = cupy.ndarray(4, cupy.int32, cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(offsets.address, 16, g), 0))
    view[2] = 10**6
    cupy.cuda.runtime.deviceSynchronize()
    out = run_script(_IMPORT_IN_A_CHILD, None, str(tmp_path / "h"))
    assert out.startswith("refused:") and "offsets" in out, out
