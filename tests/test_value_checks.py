"""The checks of values inside received frames (arrowdev/core/value_checks.py): the native scans
(capsules/values.c) against plain Python on random inputs, and the array-module checks that run on device frames
(``ArrayValues``, CuPy on a GPU) held here, with NumPy, to the native ones on the same frames: the same receipts
accepted and the same refused."""

from __future__ import annotations

import copy
import random
import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowdev as ad
from arrowdev import _capsules
from arrowdev.core import node_checks as checks
from arrowdev.core.value_checks import ArrayValues, HostValues
from arrowdev.serialize import checks as frame_checks, frames as _serialize
from support.samples import CASES, LAYOUTS, source_of


def _address(a: np.ndarray) -> int:
    return a.ctypes.data


@pytest.mark.parametrize("seed", range(40))
def test_count_set_matches_python(seed):
    r = np.random.default_rng(seed)
    bits = r.integers(0, 256, int(r.integers(1, 3000)), dtype=np.uint8)
    offset = int(r.integers(0, 8 * bits.size))
    length = int(r.integers(0, 8 * bits.size - offset + 1))
    expected = int(np.unpackbits(bits, bitorder="little")[offset:offset + length].sum())
    assert _capsules.count_set(_address(bits), offset, length) == expected


def _first_bad_offset(values: list[int], low: int, high: int) -> int:
    if values[0] < low:
        return 0
    if values[-1] > high:
        return len(values) - 1
    return next((i + 1 for i in range(len(values) - 1) if values[i + 1] < values[i]), -1)


@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("seed", range(30))
def test_check_offsets_matches_python(width, seed):
    r = random.Random(seed)
    n = r.choice([1, 2, 7, 1023, 1024, 1025, 3000])
    values = np.cumsum([r.randint(0, 5) for _ in range(n)]).astype(np.int32 if width == 4 else np.int64)
    for _ in range(r.randint(0, 2)):
        values[r.randrange(n)] = r.choice([-1, 0, 2**30, int(values[-1]) // 2])
    low, high = r.choice([0, 1]), int(values.max()) - r.choice([0, 0, 1])
    got = _capsules.check_offsets(_address(values), width, n, low, high)
    assert got == _first_bad_offset(values.tolist(), low, high)


def _first_bad_offset_numpy(values: np.ndarray, low: int, high: int) -> int:
    """The reference: the first offset below low, the last above high, then the first out of order."""
    if values[0] < low:
        return 0
    if values[-1] > high:
        return values.size - 1
    down = np.flatnonzero(values[1:] < values[:-1])
    return int(down[0]) + 1 if down.size else -1


def _offsets(r: np.random.Generator, n: int, width: int) -> np.ndarray:
    return np.cumsum(r.integers(0, 4, n), dtype=np.int64).astype(np.int32 if width == 4 else np.int64)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(2, 3000), width=st.sampled_from([4, 8]), split_bytes=st.integers(1, 4096),
       threads=st.integers(0, 9), faults=st.lists(st.tuples(st.floats(0, 1, exclude_max=True),
                                                            st.sampled_from(["drop", "spike", "low", "high"])),
                                                  max_size=3),
       seed=st.integers(0, 2**32 - 1))
def test_split_check_offsets_matches_numpy(n, width, split_bytes, threads, faults, seed):
    """Shared among threads (a split as small as one byte: up to 8 pieces of a few offsets), the check finds
    the same first bad offset as one pass of NumPy, wherever faults are planted."""
    values = _offsets(np.random.default_rng(seed), n, width)
    low, high = 0, int(values[-1])
    for where, kind in faults:
        at = int(where * n)
        if kind == "drop":  # below the one before it
            values[at] = values[at - 1] - 1 if at else low - 1
        elif kind == "spike":  # above the one after it
            values[at] = values[min(at + 1, n - 1)] + 1
        elif kind == "low":
            low = int(values[0]) + 1
        else:
            high = int(values[-1]) - 1
    got = _capsules.check_offsets(_address(values), width, n, low, high, split_bytes, threads)
    assert got == _first_bad_offset_numpy(values, low, high)
    assert got == _capsules.check_offsets(_address(values), width, n, low, high, 0, 1)  # one thread


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("width", [4, 8])
def test_split_check_offsets_finds_a_fault_at_every_position(threads, width):
    """One fault at each position in turn, boundaries between pieces included (each piece checks the pair across
    its end): the first bad offset, or the one after a spike."""
    n = 97
    good = _offsets(np.random.default_rng(threads), n, width) + 1
    for at in range(n):
        for value in ((good[at - 1] if at else good[0]) - 1, good[-1] + 1):  # a drop (below low at 0); a spike
            values = good.copy()
            values[at] = value
            low, high = int(good[0]), int(good[-1])
            got = _capsules.check_offsets(_address(values), width, n, low, high, width, threads)
            assert got == _first_bad_offset_numpy(values, low, high), (at, value)


@pytest.mark.parametrize("width", [4, 8])
def test_check_offsets_past_the_default_split(width):
    """Buffers past twice the default split (4 MiB), checked with the default arguments and with 8 threads: the
    same first bad offset as NumPy's."""
    n = (9 << 20) // width + 12345
    r = np.random.default_rng(width)
    values = _offsets(r, n, width)
    low, high = 0, int(values[-1])
    assert _capsules.check_offsets(_address(values), width, n, low, high) == -1
    for at in sorted(r.integers(1, n, 4).tolist() + [n // 2, n // 8 + 1], reverse=True):  # each one earlier
        values[at] = values[at - 1] - 1
        expected = _first_bad_offset_numpy(values, low, high)
        assert expected == at
        assert _capsules.check_offsets(_address(values), width, n, low, high) == expected
        assert _capsules.check_offsets(_address(values), width, n, low, high, 1 << 20, 8) == expected


def test_check_offsets_arguments():
    values = np.arange(4, dtype=np.int32)
    assert _capsules.check_offsets(_address(values), 4, 4, 0, 3, 1, 2) == -1
    for args in ((_address(values), 4, 4, 0), (_address(values), 4, 4, 0, 3, 1, 2, 0)):
        with pytest.raises(TypeError, match="check_offsets expects"):
            _capsules.check_offsets(*args)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                   np.uint64])
@pytest.mark.parametrize("seed", range(10))
def test_check_indices_matches_python(dtype, seed):
    r = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    n = int(r.integers(1, 3000))
    limit = int(r.choice([0, 1, 3, 100, min(int(info.max), 2**40)]))
    values = r.integers(max(int(info.min), -5), min(int(info.max), 2 * limit + 2) + 1, n).astype(dtype)
    validity = r.integers(0, 256, (n + 7) // 8 + 1, dtype=np.uint8)
    valid = np.unpackbits(validity, bitorder="little")[3:3 + n].astype(bool)
    as_int = [int(v) if not (dtype == np.uint64 and int(v) >= 2**63) else -1 for v in values]
    for mask, use in ((None, None), (validity, valid)):
        expected = next((i for i, v in enumerate(as_int) if not 0 <= v < limit and (use is None or use[i])), -1)
        got = _capsules.check_indices(_address(values), values.itemsize, int(info.min < 0), n, limit,
                                      0 if mask is None else _address(mask), 3)
        assert got == expected


def _sent(data) -> tuple[dict, list[bytes]]:
    header, frames = _serialize.host_frames(data if isinstance(data, ad.ArrowTable) else ad.column(data))
    return copy.deepcopy(header), [bytes(f) for f in frames]


def _numpy_view(frame, dtype, start: int, count: int) -> np.ndarray:
    """What CuPy's view of a device frame is for ArrayValues, over a host frame."""
    itemsize = np.dtype(dtype).itemsize
    if count == 0:
        return np.zeros(0, dtype)
    raw = (np.ctypeslib.ctypes.c_uint8 * (count * itemsize)).from_address(frame[0] + start * itemsize)
    return np.frombuffer(raw, dtype)


def _outcome(header: dict, frames: list[bytes], values_kind: str) -> str:
    """'accepted' or the refusal's first words, with host (C) or array (NumPy) value checks."""
    try:
        frame_checks.check_header(header, len(frames))
        _, shape = checks.schema_of(bytes(header["schema"]))
        kept = [np.frombuffer(f, np.uint8).copy() if f else np.zeros(8, np.uint8) for f in frames]
        spans = [(k.ctypes.data, len(f), False) for k, f in zip(kept, frames)]
        values = HostValues() if values_kind == "host" else ArrayValues(np, _numpy_view)
        checks.check_columns(header, shape, spans, values)
    except ad.InvalidArrowError as e:
        return "refused " + str(e).split(":")[1].split("(")[0].strip()
    return "accepted"


def _mutants(name: str, layout: str, seed: int) -> list[tuple[dict, list[bytes]]]:
    """The frames of a sample and a few with one value-level change (a flipped byte, a special integer)."""
    header, frames = _sent(source_of(name, layout))
    r = random.Random(seed)
    out = [(header, frames)]
    for _ in range(6):
        changed = list(frames)
        i = r.randrange(len(changed)) if changed else None
        if i is None or not changed[i]:
            continue
        raw = bytearray(changed[i])
        width = r.choice([w for w in (1, 4, 8) if w <= len(raw)])
        at = r.randrange(len(raw) // width) * width
        raw[at:at + width] = (r.choice([-1, 2**30, 0, 1, 200]) % (1 << (8 * width))).to_bytes(width, "little")
        changed[i] = bytes(raw)
        out.append((copy.deepcopy(header), changed))
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_array_checks_agree_with_the_native_ones(name, layout):
    """ArrayValues (with NumPy here, CuPy on device frames) accepts and refuses exactly what HostValues does."""
    for k, (header, frames) in enumerate(_mutants(name, layout, seed=zlib.crc32(f"{name} {layout}".encode()))):
        host, array = _outcome(header, frames, "host"), _outcome(header, frames, "array")
        assert (host == "accepted") == (array == "accepted"), (k, host, array)
        if k == 0:
            assert host == "accepted", host


def test_array_checks_name_the_node():
    header, frames = _sent(pa.array(["ab", "c"]))
    frames[header["columns"][0][0][3][1][0]] = np.array([0, 5, 1], np.int32).tobytes()
    assert "columns[0][0].buffers[1]" in _outcome(header, frames, "array")
