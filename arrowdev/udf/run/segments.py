"""Chunk alignment for row-wise UDFs over several columns: each column's chunks cut at every column's
chunk boundaries, so every segment has one zero-copy piece per column, all of the same rows.

>>> import pyarrow as pa, arrowdev as ad
>>> a = ad.column(pa.chunked_array([[1, 2, 3], [4]]))
>>> b = ad.column(pa.chunked_array([[1], [2, 3, 4]]))
>>> [[piece.length for _, piece, _ in segment] for segment in aligned_segments([of(a), of(b)])]
[[1, 1], [2, 2], [1, 1]]
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from ...core import chunks as _chunked, layout
from ...core.types import DataType

__all__ = ["ColumnChunks", "aligned_segments", "of"]


@dataclass(frozen=True)
class ColumnChunks:
    """What a UDF reads of one column: its type, its chunks (held arrays), each chunk's null count, and a
    reader of the column's memory (after its producers' events) for the null counts of slices."""

    dtype: DataType
    chunks: list[Any]
    null_count: Callable[[int], int]
    read: Callable[[int, int], bytes]


def of(column: Any) -> ColumnChunks:
    """The chunks of an arrowdev column."""
    return ColumnChunks(_chunked.dtype(column), list(_chunked.chunks(column)),
                        functools.partial(_chunked.chunk_null_count, column), _chunked.read(column))


def aligned_segments(columns: list[ColumnChunks]) -> list[list[tuple[DataType, Any, int]]]:
    """Per segment of rows, per column: (type, held piece, its null count). A single column's segments
    are its chunks."""
    if len(columns) == 1:
        (col,) = columns
        return [[(col.dtype, chunk, col.null_count(i))] for i, chunk in enumerate(col.chunks)]
    rows = sum(chunk.length for chunk in columns[0].chunks)
    bounds = sorted({0, *itertools.chain.from_iterable(_starts(c) for c in columns)} - {rows}) + [rows]
    if rows == 0:
        return []
    return [[_piece(col, lo, hi) for col in columns] for lo, hi in zip(bounds, bounds[1:])]


def _starts(col: ColumnChunks) -> list[int]:
    return list(itertools.accumulate((c.length for c in col.chunks), initial=0))[:-1]


def _piece(col: ColumnChunks, lo: int, hi: int) -> tuple[DataType, Any, int]:
    """Rows [lo, hi) of ``col``, which lie in one of its chunks (the bounds include every chunk start)."""
    for i, (chunk, first) in enumerate(zip(col.chunks, _starts(col))):
        if first <= lo < first + chunk.length:
            break
    nulls = col.null_count(i)
    if hi - lo == chunk.length:
        return col.dtype, chunk, nulls
    piece = chunk.slice(chunk.offset + lo - first, hi - lo, 0 if nulls == 0 else -1)
    if nulls != 0:
        validity = piece.buffers[0] if piece.n_buffers else 0
        nulls = layout.null_count(col.dtype, piece.offset, piece.length, validity, col.read)
    return col.dtype, piece, nulls
