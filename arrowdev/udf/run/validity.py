"""The validity of a UDF's output chunk:

- no input nulls: none;
- one nullable input, nulls propagating: the input's own bitmap, shared (zero-copy): the output is laid out
  with the input's bit position (``offset % 8``) so the same bits line up;
- several nullable inputs: the AND of their bitmaps; null-aware UDFs and rows that may fail: the kernel's
  per-row flags, packed to bits.
"""

from __future__ import annotations

from .inputs import Input
from .output import ChunkOutput

__all__ = ["merge_validity"]


def merge_validity(output: ChunkOutput, nullable: list[Input], share: bool) -> None:
    """Sets ``output``'s validity bitmap and null count (-1 where counting would synchronise a GPU), and
    makes it hold what the bitmap lives in."""
    mem, n = output.mem, output.n
    if output.writes_flags:  # packed batch by batch (ChunkOutput.add_batch)
        output.keep.append(output.bitmap_keep)
        valid_rows = output.valid_rows
        output.validity, output.null_count = output.bitmap_address, n - valid_rows if valid_rows >= 0 else -1
    elif share:  # the output's validity is the input's bitmap: the output keeps that input alive
        source = nullable[0]
        output.validity = source.held.buffers[0] + source.held.offset // 8
        output.null_count = source.null_count
        output.keep.append(source.held)
    elif nullable:
        combined = mem.valid_in_all([x.held for x in nullable], n)
        validity, packed, valid_rows = mem.pack_bits(combined, n, count_ones=True)
        output.keep.append(packed)
        output.validity, output.null_count = validity, n - valid_rows if valid_rows >= 0 else -1
