"""Sample arrays of every Arrow type (with nulls) and the layouts tests run them in: shared by
the CPU round-trip tests and the GPU copy tests. Also the device parameters the UDF tests share."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad

N = 20


def _vals(make):
    return [None if i % 4 == 1 else make(i) for i in range(N)]


def _text(i: int) -> str:
    return f"value-{i}-" + "x" * (i % 17)  # about half are longer than 12 bytes (out-of-line views)


def _lists(i: int) -> list:
    return [None if j == 1 else i + j for j in range(i % 4)]


def _cases() -> dict[str, pa.Array]:
    c = {"null": pa.nulls(N), "bool": pa.array(_vals(lambda i: i % 3 == 0), pa.bool_())}
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        c[name] = pa.array(_vals(lambda i: i * 3), getattr(pa, name)())
    c["float16"] = pa.array(np.arange(N, dtype=np.float16), mask=np.arange(N) % 4 == 1)
    c["float32"] = pa.array(_vals(lambda i: i / 4), pa.float32())
    c["float64"] = pa.array(_vals(lambda i: i / 3), pa.float64())
    for name, t in [("decimal32", pa.decimal32(7, 2)), ("decimal64", pa.decimal64(15, 2)),
                    ("decimal128", pa.decimal128(30, 2)), ("decimal256", pa.decimal256(60, 2))]:
        c[name] = pa.array(_vals(lambda i: decimal.Decimal(i) / 4), t)
    c["date32"] = pa.array(_vals(lambda i: i * 1000), pa.date32())
    c["date64"] = pa.array(_vals(lambda i: i * 86_400_000), pa.date64())
    c["time32[s]"] = pa.array(_vals(lambda i: i * 60), pa.time32("s"))
    c["time32[ms]"] = pa.array(_vals(lambda i: i * 60_000), pa.time32("ms"))
    c["time64[us]"] = pa.array(_vals(lambda i: i * 10**6), pa.time64("us"))
    c["time64[ns]"] = pa.array(_vals(lambda i: i * 10**9), pa.time64("ns"))
    for unit in ("s", "ms", "us", "ns"):
        for tz in (None, "UTC", "Europe/Paris"):
            c[f"timestamp[{unit},{tz}]"] = pa.array(_vals(lambda i: i * 10**6), pa.timestamp(unit, tz))
        c[f"duration[{unit}]"] = pa.array(_vals(lambda i: i * 7_000), pa.duration(unit))
    c["month_day_nano_interval"] = pa.array(_vals(lambda i: (i, -i, i * 10)), pa.month_day_nano_interval())
    for name, t in [("binary", pa.binary()), ("large_binary", pa.large_binary()), ("binary_view", pa.binary_view())]:
        c[name] = pa.array(_vals(lambda i: _text(i).encode()), t)
    c["fixed_size_binary"] = pa.array(_vals(lambda i: b"%05d" % i), pa.binary(5))
    for name, t in [("string", pa.string()), ("large_string", pa.large_string()), ("string_view", pa.string_view())]:
        c[name] = pa.array(_vals(_text), t)
    for name, t in [("list", pa.list_(pa.int32())), ("large_list", pa.large_list(pa.int32())),
                    ("list_view", pa.list_view(pa.int32())), ("large_list_view", pa.large_list_view(pa.int32()))]:
        c[name] = pa.array(_vals(_lists), t)
    c["fixed_size_list"] = pa.array(_vals(lambda i: [i, None, -i]), pa.list_(pa.int16(), 3))
    c["struct"] = pa.array(_vals(lambda i: {"a": i, "b": None if i % 3 == 0 else _text(i)}),
                           pa.struct([("a", pa.int64()), ("b", pa.string())]))
    c["map"] = pa.array(_vals(lambda i: [(_text(j), j if j % 2 else None) for j in range(i % 3)]),
                        pa.map_(pa.string(), pa.int64()))
    c["dictionary"] = pa.array(_vals(lambda i: ["red", "green", "blue"][i % 3]), pa.dictionary(pa.int8(), pa.string()))
    c["run_end_encoded"] = pa.RunEndEncodedArray.from_arrays(
        pa.array(range(2, N + 1, 2), pa.int32()), pa.array(_vals(lambda i: i * 5)[: N // 2], pa.int64()))
    type_ids = pa.array([i % 2 for i in range(N)], pa.int8())
    c["sparse_union"] = pa.UnionArray.from_sparse(
        type_ids, [pa.array(_vals(lambda i: i)), pa.array(_vals(_text))], ["i", "s"])
    c["dense_union"] = pa.UnionArray.from_dense(
        type_ids, pa.array([i // 2 for i in range(N)], pa.int32()),
        [pa.array(_vals(lambda i: i)[: N // 2]), pa.array(_vals(_text)[: N // 2])], ["i", "s"])
    return c


CASES = _cases()
LAYOUTS = ["whole", "slice(3)", "slice(3,11)", "chunked"]


def source_of(name: str, layout: str) -> pa.Array | pa.ChunkedArray:
    arr = CASES[name]
    if layout == "chunked":  # an empty chunk, and a third chunk at an unaligned offset
        # (the empty chunk has offset 0: PyArrow cannot concatenate an empty chunk with an offset
        # after its own C import, arrowdev or not)
        return pa.chunked_array([arr.slice(0, 7), arr.slice(0, 0), arr.slice(7)])
    return {"whole": arr, "slice(3)": arr.slice(3), "slice(3,11)": arr.slice(3, 11)}[layout]


# UDF tests run every case on the CPU and, marked `gpu`, on a GPU copy of the same column
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]


def on(device: str, data) -> ad.ArrowColumn:
    """``data`` as an arrowdev column on ``device`` ('cpu' or 'cuda')."""
    col = ad.column(data)
    return col.to_device() if device == "cuda" else col


def reference(f, *columns, null_aware=False) -> list:
    """``f`` applied row by row in plain Python, the way a UDF's result must read: a null in any input
    makes the row null, unless ``null_aware`` (then ``f`` sees ``ad.NA`` and may return it). Columns are
    lists or arrowdev columns."""
    rows = zip(*[c.to_pylist() if isinstance(c, ad.ArrowColumn) else c for c in columns])
    out = []
    for row in rows:
        if null_aware:
            r = f(*[ad.NA if v is None else v for v in row])
            out.append(None if r is ad.NA else r)
        else:
            out.append(None if any(v is None for v in row) else f(*row))
    return out


def with_ipc_header(data: bytes, **changes) -> bytes:
    """An ``export_ipc()`` result with header fields changed (its layout: magic, 8-byte length, JSON, schema)."""
    import json

    magic = data[:data.index(b"\n") + 1]  # ARROWDEV-CUDA-IPC-<version>
    size = int.from_bytes(data[len(magic):len(magic) + 8], "little")
    start = len(magic) + 8
    header = {**json.loads(data[start:start + size]), **changes}
    encoded = json.dumps(header).encode()
    return magic + len(encoded).to_bytes(8, "little") + encoded + data[start + size:]
