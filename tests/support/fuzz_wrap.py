"""The frame fuzzer's senders and receivers (tests/support/fuzz_frames.py): a sample column or table serialized as
arrowdev sends it, through every wrapping, and delivered again after the mutations, its frames next to unreadable
pages."""

from __future__ import annotations

import copy
import pickle
import random
from dataclasses import dataclass, field
from typing import Any

import distributed.protocol  # noqa: F401  (imported with the module: not timed in a child's first case)
import pyarrow as pa

import arrowdev.dask  # noqa: F401  (registers arrowdev's types with distributed's families)

from .guarded import Arena
from .samples import CASES, LAYOUTS

WRAPPINGS = ["pickle", "pickle in band", "dask", "dask wire", "dask pieces", "cuda packed"]
# ARROWDEV_FUZZ_DEVICE=1 (a GPU machine): the cuda family's device frames, mutated and put back on the GPU, instead
DEVICE_WRAPPINGS = ["cuda device"]
_PACK_ALIGNMENT = 256


@dataclass
class Sent:
    """What a sender made: the header and frames (as bytes) of arrowdev's own format, how they travel, and the
    source's values (to compare an unmutated receipt with)."""

    original: Any
    wrapping: str
    header: dict
    frames: list[bytes]
    outer: dict | None = None  # distributed's header around arrowdev's (the dask and cuda families)
    unaligned: set = field(default_factory=set)  # frames delivered at an odd address (the receiver copies them)
    at_start: set = field(default_factory=set)  # frames placed right after an unreadable page instead of before


def _source(r: random.Random) -> tuple[Any, Any, str]:
    """(arrowdev column or table, its values in PyArrow, what it is)."""
    import arrowdev as ad

    name, layout = r.choice(sorted(CASES)), r.choice(LAYOUTS + ["empty"])
    arr = CASES[name].slice(5, 0) if layout == "empty" else _layout(name, layout)
    if r.random() < 0.25:
        chunked = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
        ints = pa.chunked_array([pa.array(range(len(c)), pa.int64()) for c in chunked.chunks], pa.int64())
        table = pa.table({"v": chunked, "n": ints})
        return ad.table(table), table, f"table of {name} {layout}"
    col = ad.column(arr)
    return col, col.to_pyarrow(), f"{name} {layout}"


def _layout(name: str, layout: str) -> Any:
    from .samples import source_of

    return source_of(name, layout)


def make_sent(r: random.Random, log: list) -> Sent:
    """A random sample, serialized through a random wrapping."""
    from arrowdev.serialize import frames as _serialize

    import os

    obj, original, what = _source(r)
    wrapping = r.choice(DEVICE_WRAPPINGS if os.environ.get("ARROWDEV_FUZZ_DEVICE") else WRAPPINGS)
    log += [what, wrapping]
    if wrapping == "cuda device":
        return _device_sent(obj, original, r)
    pieces = r.choice([64, 200, 1024]) if wrapping == "dask pieces" else None
    header, frames = _serialize.host_frames(obj, piece_bytes=pieces) if pieces else _serialize.host_frames(obj)
    sent = Sent(original, wrapping, copy.deepcopy(header), [bytes(f) for f in frames])
    if wrapping.startswith("dask") or wrapping == "cuda packed":
        from distributed.protocol import serialize

        family = "cuda" if wrapping == "cuda packed" else "dask"
        outer, _ = serialize(obj, serializers=(family,))
        sent.outer = {k: v for k, v in outer.items() if k != "sub-header"}
    if wrapping == "cuda packed":
        _pack(sent, r)
    return sent


def _device_sent(obj: Any, original: Any, r: random.Random) -> Sent:
    """The cuda family's frames of the sample copied to the GPU (packed or a frame per buffer), brought back as
    bytes to be mutated (:func:`deliver` puts them on the GPU again)."""
    import cupy
    from distributed.protocol import serialize

    from arrowdev.serialize import frames as _serialize

    gpu = obj.to_device()
    before = _serialize.PACK_BELOW
    _serialize.PACK_BELOW = r.choice([0, before])  # a frame per buffer, or the small ones packed
    try:
        outer, frames = serialize(gpu, serializers=("cuda",))
    finally:
        _serialize.PACK_BELOW = before
    header = copy.deepcopy(outer.pop("sub-header"))
    host = [cupy.asnumpy(cupy.asarray(f)).tobytes() if f.nbytes else b"" for f in frames]
    return Sent(original, "cuda device", header, host, outer)


def _pack(sent: Sent, r: random.Random) -> None:
    """The frames copied into one or two packed frames, each span at a 256-byte boundary, as the cuda family packs
    a device table's small buffers (here in host memory)."""
    n_packed = 1 if len(sent.frames) < 2 or r.random() < 0.7 else 2
    data = [bytearray() for _ in range(n_packed)]
    places = []
    for i, frame in enumerate(sent.frames):
        k = i % n_packed
        data[k] += bytes(-len(data[k]) % _PACK_ALIGNMENT)
        places.append([k, len(data[k]), len(frame)])
        data[k] += frame
    sent.header.update(frames=n_packed, packed=places)
    sent.frames = [bytes(d) for d in data]


class _Sending:
    """An object pickled as arrowdev's reduce pickles a column or table, with the (mutated) header and frames."""

    def __init__(self, header: dict, frames: list) -> None:
        self.header, self.frames = header, frames

    def __reduce_ex__(self, protocol: int) -> tuple:
        import arrowdev as ad
        from arrowdev.serialize import frames as _serialize

        return _serialize.unpickle, (ad.ArrowColumn, self.header, *[pickle.PickleBuffer(f) for f in self.frames])


def _placed(sent: Sent, arena: Arena) -> list[Any]:
    """The frames as a transport hands them over: each next to an unreadable page, or at an odd address."""
    out = []
    for i, frame in enumerate(sent.frames):
        if i in sent.unaligned:
            raw = bytearray(len(frame) + 1)
            raw[1:] = frame
            out.append(memoryview(raw)[1:])
        else:
            out.append(arena.place(frame, at_end=i not in sent.at_start))
    return out


def deliver(r: random.Random, sent: Sent, arena: Arena) -> Any:
    """Receives the (mutated) header and frames through the sample's wrapping."""
    if sent.wrapping == "cuda device":
        import cupy
        import numpy as np
        from distributed.protocol import deserialize

        frames = [cupy.asarray(np.frombuffer(f, np.uint8)) for f in sent.frames]
        return deserialize({**sent.outer, "sub-header": sent.header}, frames, deserializers=("cuda",))
    frames = _placed(sent, arena)
    if sent.wrapping == "pickle":
        buffers: list = []
        data = pickle.dumps(_Sending(sent.header, frames), protocol=5, buffer_callback=buffers.append)
        return pickle.loads(data, buffers=buffers)
    if sent.wrapping == "pickle in band":
        return pickle.loads(pickle.dumps(_Sending(sent.header, [bytes(f) for f in frames]), protocol=5))
    from distributed.protocol import deserialize

    header = sent.header
    if sent.wrapping == "dask wire":  # the sub-header through msgpack, as distributed's comms carry it
        import msgpack

        try:
            header = msgpack.loads(msgpack.dumps(header, use_bin_type=True), use_list=False, strict_map_key=False)
        except (OverflowError, TypeError, ValueError):  # a mutated value msgpack cannot carry: sent as it is
            pass
    return deserialize({**sent.outer, "sub-header": header}, frames)
