"""One input chunk of a UDF as its kernel reads it: the Arrow buffers in place, and the kernel arguments made
from them (codegen.py's calling convention)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.types import DataType
from ..spec import Kind
from ..compile.arrow_types import input_kind

if TYPE_CHECKING:
    from .buffers import Memory

__all__ = ["Input"]


class Input:
    """One input chunk as the kernel sees it."""

    def __init__(self, dtype: DataType, held: Any, null_count: int) -> None:
        self.held, self.null_count = held, null_count
        self.kind = input_kind(dtype)
        self.np_dtype = self.kind.numpy  # None for bits and strings
        self.has_validity = null_count > 0 and bool(held.buffers[0])

    def kernel_args(self, mem: Memory, n: int, start: int = 0) -> list[Any]:
        """(data, validity, offset, extra) as the kernel takes them (see codegen._load), for rows
        [start, start + n) of the chunk: a launch over a range of rows reads them from its offset."""
        held, offset = self.held, self.held.offset + start
        extra: Any = np.int64(0)
        if self.kind in (Kind.UTF8_32, Kind.UTF8_64):
            data = mem.view(held.buffers[1], offset + n + 1, np.int32 if self.kind == Kind.UTF8_32 else np.int64, held)
            extra = np.int64(held.buffers[2])
        elif self.kind == Kind.UTF8_VIEW:
            data = mem.view(held.buffers[1], 4 * (offset + n), np.int32, held)
            extra = mem.constant_array(np.array([held.buffers[1], *held.buffers[2:-1]], dtype=np.int64))
        elif self.np_dtype is None:
            data = mem.view(held.buffers[1], (offset + n + 7) // 8, np.uint8, held)
        else:  # float16 on the CPU: its bits (the kernel widens them, numba's CPU target has no float16)
            dtype = np.uint16 if self.np_dtype == np.float16 and not mem.gpu else self.np_dtype
            data = mem.view(held.buffers[1], offset + n, dtype, held)
        validity = held.buffers[0] if self.has_validity else 0
        return [data, mem.view(validity, (offset + n + 7) // 8 if validity else 1, np.uint8, held), np.int64(offset),
                extra]
