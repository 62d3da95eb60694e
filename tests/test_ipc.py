"""numba EMM plugin over arrowdev's pool, the leak check, and CUDA IPC between processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import arrowdev as ad
from support.samples import with_ipc_header


def _run(script: str, env: dict[str, str] | None = None, *args: str) -> str:
    """Runs a script in a fresh interpreter, with numba's default memory manager unless ``env`` names one."""
    inherited = {k: v for k, v in os.environ.items() if k != "NUMBA_CUDA_MEMORY_MANAGER"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                            timeout=300, env={**inherited, **(env or {})})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


# ---- leak check (CPU and GPU) ------------------------------------------------------------------

def test_leak_check_passes_on_code_that_drops_what_it_makes():
    with ad.debug.leak_check():
        col = ad.column(pa.chunked_array([[1, 2], [3]]))
        tbl = ad.table({"a": col})
        assert pa.table(tbl).num_rows == 3
        del col, tbl


def test_leak_check_names_what_leaked():
    kept = []
    with pytest.raises(ad.debug.LeakError, match="live_containers: 0 -> 1|live_containers: \\d+ -> \\d+"):
        with ad.debug.leak_check():
            kept.append(ad.column(pa.array([1, 2, 3])))
    capsules = []
    with pytest.raises(ad.debug.LeakError, match="live_exported_nodes"):
        with ad.debug.leak_check():
            capsules.append(ad.column(pa.array([1])).__arrow_c_device_array__())
    assert isinstance(ad.debug.LeakError("x"), AssertionError)


@pytest.mark.gpu
def test_leak_check_covers_device_memory():
    with ad.debug.leak_check():
        g = ad.column(pa.array(list(range(1000)))).to_device()
        assert g.apply(lambda x: x + 1).to_host().to_pylist()[-1] == 1000
        del g
    kept = []
    with pytest.raises(ad.debug.LeakError, match="device bytes in use"):
        with ad.debug.leak_check():
            kept.append(ad.column(pa.array([1.0] * 1000)).to_device())


@pytest.mark.gpu
def test_leak_check_counts_nrt_when_nrt_ran():
    out = _run("""
        import numpy as np
        from numba import cuda
        import arrowdev as ad
        from arrowdev import debug

        @cuda.jit
        def kernel(out):
            scratch = np.zeros(4)  # an NRT allocation inside the kernel
            scratch[1] = 2.0
            out[0] = scratch.sum()

        out = cuda.device_array(1)
        with ad.debug.leak_check():
            kernel[1, 1](out)
            cuda.synchronize()
        counts = debug._snapshot()
        assert "NRT allocations" in counts and "NRT MemInfos" in counts, counts
        assert out.copy_to_host()[0] == 2.0
        print("ok", counts["NRT allocations"], counts["NRT MemInfos"])
    """, {"NUMBA_CUDA_ENABLE_NRT": "1", "NUMBA_CUDA_NRT_STATS": "1"})
    assert out.split() == ["ok", "0", "0"]


# ---- the numba EMM plugin ----------------------------------------------------------------------

def test_plugin_implements_numba_interface_version_1():
    from numba.cuda.cudadrv.driver import BaseCUDAMemoryManager

    from arrowdev.cuda import numba_emm

    plugin = numba_emm._numba_memory_manager(context=None)
    assert isinstance(plugin, BaseCUDAMemoryManager)
    assert plugin.interface_version == 1
    for name in ("memalloc", "memhostalloc", "mempin", "initialize", "get_memory_info", "get_ipc_handle",
                 "reset", "defer_cleanup"):
        assert callable(getattr(plugin, name))


def test_use_for_numba_installs_the_plugin_before_a_context():
    _run("""
        import arrowdev as ad
        from numba.cuda.cudadrv import driver
        ad.cuda.use_for_numba()
        assert driver._memory_manager.__name__ == "ArrowdevNumbaMemoryManager"
        print("ok")
    """)


@pytest.mark.gpu
def test_use_for_numba_after_numba_made_a_context_raises():
    _run("""
        from numba import cuda
        import arrowdev as ad
        cuda.device_array(4)  # numba's own manager makes the context
        try:
            ad.cuda.use_for_numba()
        except RuntimeError as e:
            assert "before numba's first device array" in str(e)
            print("refused")
        else:
            raise SystemExit("not refused")
    """)


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["env", "call"])
def test_numba_arrays_come_from_the_accounted_pool(how):
    out = _run("""
        import sys, gc, numpy as np
        import arrowdev as ad
        if sys.argv[1] == "call":
            ad.cuda.use_for_numba()
        from numba import cuda
        before = ad.cuda.memory_stats()
        arr = cuda.to_device(np.arange(1 << 20, dtype=np.float64))
        mid = ad.cuda.memory_stats()
        assert mid["bytes_in_use"] - before["bytes_in_use"] == 8 << 20, (before, mid)
        assert arr.copy_to_host()[-1] == (1 << 20) - 1
        handle = cuda.current_context().get_ipc_handle(arr.gpu_data)  # the plugin's get_ipc_handle
        assert handle.size == 8 << 20 and handle.offset >= 0  # the pool block's handle, the array's offset in it
        with cuda.defer_cleanup():
            del arr, handle
            gc.collect()
            held = ad.cuda.memory_stats()["bytes_in_use"] - before["bytes_in_use"]
        after = ad.cuda.memory_stats()
        assert held == 8 << 20, held                            # held while cleanup is deferred
        assert after["bytes_in_use"] == before["bytes_in_use"]  # back to the pool after
        free, total = cuda.current_context().get_memory_info()
        assert 0 < free <= total
        print("ok", mid["allocations"] - before["allocations"])
    """, {"NUMBA_CUDA_MEMORY_MANAGER": "arrowdev.cuda.numba_emm"} if how == "env" else None, how)
    assert out.startswith("ok")


# ---- CUDA IPC ----------------------------------------------------------------------------------

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
    seen = json.loads(_run(_IMPORTER, None, str(path)))
    assert seen["rows"] == _TABLE.to_pylist()
    assert seen["device"] == "cuda"
    if drop_exporter_first:
        del g  # the importer has exited and closed its mappings either way; no crash here
    column = ad.column(pa.array([1.5, None, 2.5])).to_device()[1:]
    path.write_bytes(column.export_ipc())
    out = _run("""
        import sys, arrowdev as ad
        col = ad.import_ipc(open(sys.argv[1], "rb").read())
        print(col.to_pylist(), col.null_count, col.device.type)
    """, None, str(path))
    assert out.strip() == "[None, 2.5] 1 cuda"


@pytest.mark.gpu
def test_ipc_every_type(tmp_path):
    """A table of every sample type (tests/support/samples.py) crosses processes; the importer writes what it sees
    to an Arrow IPC file, compared here with the source. Buffers share pool blocks: fewer handles than
    buffers, each buffer an offset into its block."""
    from support.samples import CASES

    source = pa.table({name: CASES[name] for name in CASES})
    g = ad.table(source).to_device()
    data = g.export_ipc()
    magic = b"ARROWDEV-CUDA-IPC-1\n"
    size = int.from_bytes(data[len(magic):len(magic) + 8], "little")
    header = json.loads(data[len(magic) + 8:len(magic) + 8 + size])
    n_buffers = sum(1 for b in ad.table(g).to_device().columns for info in b.buffers if info.address)
    assert 0 < len(header["handles"]) < n_buffers
    (tmp_path / "handle").write_bytes(data)
    _run("""
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
    _run("""
        import sys, pyarrow as pa, arrowdev as ad
        g = ad.column(pa.array([1, 2, 3])).to_device()
        open(sys.argv[1], "wb").write(g.export_ipc())
    """, None, str(path))
    with pytest.raises(ad.InvalidArrowError, match="stale|cannot open"):
        ad.import_ipc(path.read_bytes())
    g = ad.column(pa.array([1, 2])).to_device()
    with pytest.raises(ad.InvalidArrowError, match="another node"):
        ad.import_ipc(with_ipc_header(g.export_ipc(), host="elsewhere"))


