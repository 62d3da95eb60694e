"""ad.debug.leak_check(): it passes on code that drops what it makes, names what leaked, and counts device
memory and (when NRT ran) numba's NRT allocations."""

from __future__ import annotations

import types

import pyarrow as pa
import pytest

import arrowdev as ad
from support.scripts import run_script


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
    out = run_script("""
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


class _Event:
    """Stands for a ``runtime.SyncEvent`` in arrowdev.gpu.memory's watch list: all it reads is its CuPy
    event's ``done``."""

    def __init__(self) -> None:
        self.event = types.SimpleNamespace(done=False)


def test_a_watched_sync_event_lives_until_it_fired_and_was_dropped(monkeypatch):
    """keep_until holds the SyncEvent itself, not only its CuPy event: a SyncEvent whose array went would
    otherwise recycle the event (runtime.SyncEvent.__del__), the next copy would record it again before its
    own look at the list, and the front entry would look pending: every later copy's staging ring held, up
    to the sweep (tests/test_cuda.py::test_copies_in_a_loop_hold_one_staging_ring_not_one_per_copy)."""
    import weakref

    from arrowdev.gpu import memory

    monkeypatch.setattr(memory, "_watch", [])
    monkeypatch.setattr(memory, "_pool", None)
    monkeypatch.setattr(memory, "_calls_since_sweep", 0)
    sync = _Event()
    watched = weakref.ref(sync)
    memory.keep_until(sync, object())
    del sync  # the array holding it went
    memory.keep_until(_Event())
    assert watched() is not None  # still watched: its event cannot be recycled and recorded again
    memory._watch[0][0].event.done = True
    memory.keep_until(_Event())
    assert watched() is None and len(memory._watch) == 2


def test_what_waits_on_events_goes_once_they_fire_front_first_and_all_at_each_sweep(monkeypatch):
    """keep_until drops, on each call, the held objects of the fired events at the front of its list (work on one
    stream finishes in order), and every _SWEEP_EVERY calls those of every fired event; while anything waits,
    memory.in_use() is true, so the leak check drains the list even after a test reset the pool."""
    import weakref

    from arrowdev.gpu import memory

    class Held:
        pass

    monkeypatch.setattr(memory, "_watch", [])
    monkeypatch.setattr(memory, "_pool", None)
    monkeypatch.setattr(memory, "_calls_since_sweep", 0)
    front, blocker, behind = _Event(), _Event(), _Event()
    objects = [Held(), Held(), Held()]
    alive = [weakref.ref(o) for o in objects]
    for event, obj in zip((front, blocker, behind), objects):
        memory.keep_until(event, obj)
    del objects, obj
    assert memory.in_use()
    behind.event.done = True  # fired, but behind a pending event
    memory.keep_until(_Event())
    assert [ref() is None for ref in alive] == [False, False, False]
    front.event.done = True  # the front fired: it goes; `behind` still waits behind `blocker`
    memory.keep_until(_Event())
    assert [ref() is None for ref in alive] == [True, False, False]
    calls = memory._calls_since_sweep
    for _ in range(memory._SWEEP_EVERY - calls - 1):
        memory.keep_until(_Event())
    assert alive[2]() is not None  # no sweep yet
    memory.keep_until(_Event())  # the sweep: every fired event's objects go
    assert [ref() is None for ref in alive] == [True, False, True]
    assert len(memory._watch) == memory._SWEEP_EVERY - 2  # one entry per call, less the two that fired
