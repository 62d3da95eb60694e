"""Ownership invariants C1-C5 (docs/architecture.md, capsules/container.c), shown with a producer whose
release callbacks count their calls per node (tests/support/counting_producer.py)."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import textwrap
import threading

import nanoarrow as na
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev import _capsules
from support.cabi import ArrowArray, ArrowDeviceArray, ArrowSchema, capsule_pointer
from support.counting_producer import EXPECTED_ROWS, CountingProducer


@pytest.fixture(scope="module", autouse=True)
def _collector_walks_only_new_objects():
    """These tests collect garbage after every drop. In a pytest-xdist worker that has already imported numba,
    Dask, Polars and more, each full collection walks millions of objects (the drop-order property took over
    10 minutes of CI that way); what is alive before this module is frozen out of the collector's walk.
    Reference counting still frees everything at once, so the tests see every release as before."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def _drop(holders: dict, name: str) -> None:
    del holders[name]
    gc.collect()


def test_release_runs_once_when_the_owner_goes(balanced):
    producer = CountingProducer()
    col = ad.column(producer.capsules())
    assert col.to_pylist() == EXPECTED_ROWS
    producer.assert_not_released()
    del col
    gc.collect()
    producer.assert_released_once()


def test_import_moves_the_struct_and_leaves_release_null():
    producer = CountingProducer()
    schema, capsule = producer.capsules()
    col = ad.column((schema, capsule))
    moved_from = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    assert not moved_from.array.release
    with pytest.raises(ad.InvalidArrowError, match="consumed or released"):
        ad.column((pa.struct([]).__arrow_c_schema__(), capsule))
    del col, capsule
    gc.collect()
    producer.assert_released_once()


class _MovedChild:
    """A consumer that moves child 0 out of an export (bitwise, as the spec allows), then
    releases the parent at once: the moved child must stand alone (C2)."""

    def __init__(self, col: ad.ArrowColumn) -> None:
        _, capsule = col.__arrow_c_device_array__()
        parent = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
        self.child = ArrowArray()
        ctypes.memmove(ctypes.addressof(self.child), parent.array.children[0], ctypes.sizeof(ArrowArray))
        parent.array.children[0].contents.release = type(parent.array.release)()
        del parent, capsule  # the capsule destructor releases the parent now

    def __del__(self) -> None:
        self.child.release(ctypes.pointer(self.child))


def _holders(col: ad.ArrowColumn) -> dict:
    return {
        "column": col,
        "slice": col[1:3],
        "child": col.children[1],
        "field": col.field("c"),
        "dictionary": col.field("c").dictionary,
        "capsules": col.__arrow_c_device_array__(),
        "stream": col.__arrow_c_device_stream__(),
        "pyarrow": pa.array(col),
        "table": ad.table(col),
        "nanoarrow": na.Array(col),
        "moved_child": _MovedChild(col),
    }


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(list(_holders(ad.column(CountingProducer().capsules())))))
def test_release_waits_for_every_holder_in_any_drop_order(order):
    gc.collect()
    before = ad.debug.ownership_stats()
    producer = CountingProducer()
    holders = _holders(ad.column(producer.capsules()))
    for name in order[:-1]:
        _drop(holders, name)
        producer.assert_not_released()
    _drop(holders, order[-1])
    producer.assert_released_once()
    after = ad.debug.ownership_stats()
    for key in ("live_exported_nodes", "live_node_blocks", "live_built_nodes"):  # each export's one allocation
        assert after[key] == before[key], key                                     # is freed with its last node


def test_moved_out_children_released_after_the_parent(balanced):
    producer = CountingProducer()
    col = ad.column(producer.capsules())
    moved = [_MovedChild(col.chunks[0]) for _ in range(3)]
    del col
    gc.collect()
    producer.assert_not_released()
    while moved:
        moved.pop()
        gc.collect()
        if moved:
            producer.assert_not_released()
    producer.assert_released_once()


def test_schema_copies_are_freed_with_their_last_node_in_any_order():
    """Exported schemas share one allocation per copy (capsules/schema.c S1): a child moved out
    keeps it until the child is released, after its parent."""
    col = ad.column(CountingProducer().capsules())
    col.__arrow_c_schema__()  # arrowdev's own copies (its parsed types keep one) exist from here
    gc.collect()
    before = ad.debug.ownership_stats()["live_schema_copies"]
    pa.array(col), col.__arrow_c_device_array__(), col.__arrow_c_stream__()  # consumed or not
    capsule = col.__arrow_c_schema__()
    parent = ArrowSchema.from_address(capsule_pointer(capsule, "arrow_schema"))
    child = ArrowSchema()
    ctypes.memmove(ctypes.addressof(child), parent.children[1], ctypes.sizeof(ArrowSchema))
    parent.children[1].contents.release = type(parent.release)()  # moved out
    del parent, capsule
    gc.collect()
    assert ad.debug.ownership_stats()["live_schema_copies"] == before + 1  # the child keeps its copy
    assert child.format == b"+l" and child.children[0].contents.format == b"i"
    child.release(ctypes.pointer(child))
    assert not child.release
    assert ad.debug.ownership_stats()["live_schema_copies"] == before


def test_every_exported_node_has_its_own_private_data():
    col = ad.column(CountingProducer().capsules())
    _, capsule = col.__arrow_c_device_array__()
    top = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array")).array
    nodes = [top] + [top.children[i].contents for i in range(top.n_children)]
    nodes.append(top.children[2].contents.dictionary.contents)
    privates = [n.private_data for n in nodes]
    addresses = [ctypes.addressof(n) for n in nodes]
    assert len(set(privates)) == len(nodes)
    assert not set(privates) & set(addresses)
    assert all(n.release for n in nodes)


def test_release_from_many_threads_at_once(balanced):
    producer = CountingProducer()
    col = ad.column(producer.capsules())
    owned = []
    for _ in range(64):  # take each export out of its capsule, so the threads release them
        _, capsule = col.__arrow_c_device_array__()
        mine = ArrowDeviceArray()
        src = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
        ctypes.memmove(ctypes.addressof(mine), ctypes.addressof(src), ctypes.sizeof(ArrowDeviceArray))
        src.array.release = type(src.array.release)()
        owned.append(mine)
    del col, capsule, src
    gc.collect()
    barrier = threading.Barrier(8)

    def release(chunk):
        barrier.wait()
        for struct in chunk:  # ctypes calls release with the GIL released
            struct.array.release(ctypes.pointer(struct.array))

    threads = [threading.Thread(target=release, args=(owned[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    producer.assert_released_once()


def test_polars_consumes_streams_and_release_balances(balanced):
    producer = CountingProducer()
    tbl = ad.table(producer.capsules()).select(["a", "b"])
    df = pl.DataFrame(tbl)
    assert df.to_dicts() == [{"a": r["a"], "b": r["b"]} for r in EXPECTED_ROWS]
    series = pl.Series(tbl["a"])
    assert series.to_list() == [1, None, 3, 4]
    del tbl
    gc.collect()
    del df, series
    gc.collect()
    producer.assert_released_once()


@pytest.mark.parametrize("protocol", ["__arrow_c_schema__", "__arrow_c_array__", "__arrow_c_device_array__",
                                      "__arrow_c_stream__", "__arrow_c_device_stream__"])
def test_capsules_never_consumed_are_released_by_their_destructors(protocol, balanced):
    producer = CountingProducer()
    col = ad.column(producer.capsules())
    exported = getattr(col, protocol)()
    del col
    gc.collect()
    if protocol != "__arrow_c_schema__":
        producer.assert_not_released()
    del exported
    gc.collect()
    producer.assert_released_once()


def test_streams_release_the_arrays_never_pulled(balanced):
    producer = CountingProducer()
    col = ad.column(producer.capsules())
    reader = pa.RecordBatchReader._import_from_c_capsule(ad.table(col).__arrow_c_stream__())
    del col
    gc.collect()
    producer.assert_not_released()
    del reader
    gc.collect()
    producer.assert_released_once()


def test_device_arrays_are_held_without_touching_memory_and_keep_their_device():
    """A CUDA array from a producer is held and re-exported as is: device, id, sync event; the
    producer's garbage in reserved is tolerated and ours is zeroed (C4). The buffer addresses
    are fake: touching them would crash, so this also shows nothing reads them."""
    producer = CountingProducer()
    schema, capsule = producer.capsules()
    src = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    src.array.null_count = -1  # a struct without validity: the count is 0 without reading memory
    src.device_type, src.device_id, src.sync_event = 2, 0, 0xDEAD0
    src.reserved[:] = [7, 8, 9]
    col = ad.column((schema, capsule))
    assert col.device == ad.Device("cuda", 0) and len(col) == 4 and col.type.id == "struct"
    _, out = col.__arrow_c_device_array__()
    exported = ArrowDeviceArray.from_address(capsule_pointer(out, "arrow_device_array"))
    assert (exported.device_type, exported.device_id, exported.sync_event) == (2, 0, 0xDEAD0)
    assert list(exported.reserved) == [0, 0, 0]
    del col, out, exported, src, capsule
    gc.collect()
    producer.assert_released_once()


def test_interpreter_exit_with_live_exports_does_not_crash():
    script = textwrap.dedent("""
        import threading, time
        import pyarrow as pa
        import arrowdev as ad
        from arrowdev import _capsules

        col = ad.column(pa.chunked_array([["a", "b"], ["c"]]))
        one = col.combine_chunks()  # several chunks offer only the streams
        keep = [one.__arrow_c_device_array__(), col.__arrow_c_stream__(), pa.array(col), col[1:]]
        kept_alive = _capsules.build(ad.DataType.from_arrow(pa.struct([])), 0, 0, 0, [0], [], keepalive=[object()])  # a Python keep-alive
        exports = [one.__arrow_c_device_array__() for _ in range(1000)]

        def drop_slowly():
            while exports:
                exports.pop()
                time.sleep(0.0005)

        threading.Thread(target=drop_slowly, daemon=True).start()
        time.sleep(0.01)
        print("exiting", ad.debug.ownership_stats()["live_containers"] > 0)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting True"
    assert "Fatal" not in result.stderr and "Segmentation" not in result.stderr


def test_ownership_stats_count_imports_and_releases():
    gc.collect()
    before = ad.debug.ownership_stats()
    col = ad.column(pa.array([1, 2, 3]))
    capsules = col.__arrow_c_device_array__()
    mid = ad.debug.ownership_stats()
    assert mid["imports"] - before["imports"] == 1
    assert mid["live_containers"] - before["live_containers"] == 1
    assert mid["live_exported_nodes"] - before["live_exported_nodes"] == 1
    del col, capsules
    gc.collect()
    after = ad.debug.ownership_stats()
    assert after["producer_releases"] - before["producer_releases"] == 1
    assert after["live_exported_nodes"] == before["live_exported_nodes"]


def test_built_nodes_drop_their_python_keepalive():
    class Owner:
        dropped = 0

        def __del__(self):
            Owner.dropped += 1

    built = _capsules.build(ad.DataType.from_arrow(pa.struct([])), 3, 0, 0, [0], [], keepalive=Owner())
    capsule = built.export_device()
    del built
    gc.collect()
    assert Owner.dropped == 0
    del capsule
    gc.collect()
    assert Owner.dropped == 1
