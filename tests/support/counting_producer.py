"""A producer the tests control: ``struct<a: int32, b: list<int32>, c: dictionary<int8, int32>>``
built by hand from :class:`support.cabi.ArrayProducer` nodes, each of which counts its release calls.
The nodes follow the specification's rules: a parent's release releases the children and
dictionary it still owns, then sets its own release to NULL.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .cabi import ArrayProducer

TYPE = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.int32())), ("c", pa.dictionary(pa.int8(), pa.int32()))])
EXPECTED_ROWS = [
    {"a": 1, "b": [1], "c": 10},
    {"a": None, "b": None, "c": 20},
    {"a": 3, "b": [], "c": None},
    {"a": 4, "b": [2, 3], "c": 10},
]


def _bytes(values, dtype) -> bytes:
    return np.array(values, dtype).tobytes()


class CountingProducer:
    """Makes one tree of EXPECTED_ROWS; ``releases()`` counts release calls per node name."""

    def __init__(self) -> None:
        validity = _bytes([0b1101], np.uint8)
        self.nodes = {
            "a": ArrayProducer(4, [validity, _bytes([1, 0, 3, 4], np.int32)], null_count=-1),
            "b.item": ArrayProducer(3, [0, _bytes([1, 2, 3], np.int32)]),
            "c.dictionary": ArrayProducer(2, [0, _bytes([10, 20], np.int32)]),
        }
        self.nodes["b"] = ArrayProducer(4, [validity, _bytes([0, 1, 1, 1, 3], np.int32)], [self.nodes["b.item"]],
                                        null_count=-1)
        self.nodes["c"] = ArrayProducer(4, [_bytes([0b1011], np.uint8), _bytes([0, 1, 0, 0], np.int8)],
                                        dictionary=self.nodes["c.dictionary"], null_count=-1)
        self.nodes["top"] = ArrayProducer(4, [0], [self.nodes["a"], self.nodes["b"], self.nodes["c"]])

    def capsules(self) -> tuple[object, object]:
        """(schema, device array) capsules; call once per producer."""
        return TYPE.__arrow_c_schema__(), self.nodes["top"].device_capsule()

    def releases(self) -> dict[str, int]:
        return {name: node.releases for name, node in self.nodes.items()}

    def assert_released_once(self) -> None:
        assert self.releases() == dict.fromkeys(self.nodes, 1)

    def assert_not_released(self) -> None:
        assert sum(self.releases().values()) == 0, self.releases()
