"""PyArrow adapter: conversions, casts and concatenation done by PyArrow on CPU data.

Adapters translate; they own nothing. Everything here goes through the PyCapsule protocols, so
the PyArrow objects share arrowdev's buffers and keep its containers alive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from ..column import ArrowColumn
    from ..types import DataType


def to_chunked_array(col: ArrowColumn) -> pa.ChunkedArray:
    """The column as a ``pyarrow.ChunkedArray`` (zero-copy for CPU data)."""
    return pa.chunked_array(col)


def cast(col: ArrowColumn, target: DataType) -> ArrowColumn:
    """The column cast to ``target`` by PyArrow (a copy of what the cast rewrites)."""
    from ..column import ArrowColumn
    from ..types import DataType

    target_type = target.to_pyarrow()
    cast_chunks = [chunk.cast(target_type) for chunk in to_chunked_array(col).chunks]
    field = pa.field(col.name or "", target_type, nullable=col.type.nullable)
    imported = ArrowColumn.from_arrow(pa.chunked_array(cast_chunks, type=target_type))
    return ArrowColumn(DataType.from_arrow(field), imported._chunks)


def concatenate(col: ArrowColumn) -> ArrowColumn:
    """The column as one chunk: PyArrow concatenates the chunks (a copy)."""
    from ..column import ArrowColumn

    # Empty chunks are left out: PyArrow loses the buffers of an empty chunk with an offset after
    # its own C import, and they add nothing.
    chunks = [c for c in to_chunked_array(col).chunks if len(c)]
    merged = pa.concat_arrays(chunks) if chunks else pa.array([], type=col.type.to_pyarrow())
    return ArrowColumn(col.type, ArrowColumn.from_arrow(merged)._chunks)
