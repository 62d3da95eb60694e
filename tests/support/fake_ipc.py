"""CUDA IPC without a GPU, for tests of the lease wiring (export, import, publish, re-export).

:class:`FakeCudaCalls` stands in for ``arrowdev.cuda.ipc.CudaCalls``: "device memory" is host memory
registered as allocations, a handle is 64 bytes naming the exporting process, the allocation's address and
size, and opening one in another process maps nothing (a fresh host block stands for the mapping: the
tests check structure, leases and counts, never values, which only a GPU can show). ``device_column``
makes a column that says it lives on CUDA device 0 over a PyArrow array's buffers.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from arrowdev import _capsules
from arrowdev.core import chunks as _chunked
from arrowdev.cuda import ipc
from arrowdev.core.types import DataType

UUID = "fa4e" * 8


class FakeCudaCalls:
    def __init__(self) -> None:
        self.allocations: dict[int, tuple[int, Any]] = {}  # base -> (size, what keeps it)
        self.opened: dict[int, Any] = {}  # mapped base -> its stand-in block
        self.synchronized = 0
        self.closed = 0

    def register(self, base: int, size: int, keep: Any) -> None:
        self.allocations[base] = (size, keep)

    def check_device(self, device_id: int) -> None:
        if device_id != 0:
            raise ValueError(f"expected device 0, got {device_id}")

    def device_uuid(self, device_id: int) -> str:
        return UUID

    def device_with_uuid(self, uuid: str) -> int | None:
        return 0 if uuid == UUID else None

    def allocation(self, address: int) -> tuple[int, int]:
        for base, (size, _) in self.allocations.items():
            if base <= address < base + size:
                return base, size
        for base, block in self.opened.items():  # a mapping: its size is the handle's
            if base <= address < base + block.size:
                return base, block.size
        raise ValueError(f"{address:#x} is in no fake allocation")

    def value_checks(self, frames: list, device_id: int) -> Any:
        """The values of a fake mapping are zeros, not the exporter's: nothing to check (a GPU test checks them)."""
        from arrowdev.core.value_checks import SizesOnly

        return SizesOnly()

    def get_handle(self, base: int) -> bytes:
        return struct.pack("<qqq", os.getpid(), base, self.allocations[base][0]).ljust(64, b"\0")

    def open_handle(self, handle: bytes, device_id: int) -> int:
        pid, _, size = struct.unpack("<qqq", handle[:24])
        assert pid != os.getpid(), "a process must not open its own handle (CUDA refuses it)"
        block = np.zeros(size, dtype=np.uint8)
        self.opened[block.ctypes.data] = block
        return block.ctypes.data

    def close_handle(self, base: int, device_id: int) -> None:
        del self.opened[base]
        self.closed += 1

    def synchronize(self, device_id: int) -> None:
        self.synchronized += 1

    def pinned(self, addresses: list[int]) -> dict[int, int]:
        found = {}
        for address in addresses:
            base, size = self.allocation(address)
            found[base] = size
        return found


def install(monkeypatch: Any = None) -> FakeCudaCalls:
    """Makes arrowdev's IPC use a fresh fake (through ``monkeypatch`` in a test, for good in a child)."""
    fake = FakeCudaCalls()
    if monkeypatch is not None:
        monkeypatch.setattr(ipc, "calls", fake)
    else:
        ipc.calls = fake
    return fake


def device_column(fake: FakeCudaCalls, values: pa.Array) -> Any:
    """A column on "CUDA device 0" over ``values``' buffers (a flat array: numbers, strings), each buffer
    one fake allocation."""
    dtype = DataType.from_arrow(values.type)
    addresses = []
    for buffer in values.buffers():
        if buffer is None:
            addresses.append(0)
        else:
            fake.register(buffer.address, max(buffer.size, 1), buffer)
            addresses.append(buffer.address)
    held = _capsules.build(dtype, len(values), values.null_count, values.offset, addresses, [], None,
                           device_type=2, device_id=0, keepalive=values)
    return _chunked.make("column", dtype, [held])


# The first lines of a child script that uses the fake (tests/ on the path as pytest puts it there).
CHILD_PRELUDE = f"""
import sys
sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r})
from support import fake_ipc
fake = fake_ipc.install()
"""
