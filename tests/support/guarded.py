"""Memory next to an unreadable page, for the frame fuzzer (tests/support/fuzz_frames.py): a frame placed so that
it ends where a page that cannot be read begins (or begins where one ends) turns a read past its end (or before
its start) into a crash, which the fuzzer counts, instead of a silent read of whatever the heap holds there.

Linux and macOS (mmap + mprotect through ctypes). Frames end within 7 bytes of the page (their start stays 8-byte
aligned, else the receiver would copy them, and the copy has no guard): an over-read of fewer bytes than that
slack is not caught by the page, only by the checks' exact sizes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap

_PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_ANONYMOUS = getattr(mmap, "MAP_ANONYMOUS", 0x20)
_PROT_NONE = 0


class Arena:
    """Mappings that hold frames next to unreadable pages; :meth:`release` unmaps them all (after the case:
    nothing may use the frames then)."""

    def __init__(self) -> None:
        self.mappings: list[tuple[int, int]] = []

    def _map(self, size: int) -> int:
        address = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"mmap of {size} bytes failed (errno {ctypes.get_errno()})")
        self.mappings.append((address, size))
        return address

    def place(self, data: bytes, at_end: bool = True) -> memoryview:
        """A read-only view of a copy of ``data``, ending within 7 bytes of an unreadable page (``at_end``) or
        starting right after one."""
        n = len(data)
        pages = -(-max(n, 1) // _PAGE)
        base = self._map((pages + 1) * _PAGE)
        if at_end:
            guard = base + pages * _PAGE
            start = guard - (-(-n // 8) * 8)
        else:
            guard, start = base, base + _PAGE
        if _libc.mprotect(guard, _PAGE, _PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        ctypes.memmove(start, data, n)
        return memoryview((ctypes.c_char * n).from_address(start)).cast("B").toreadonly()

    def release(self) -> None:
        for address, size in self.mappings:
            _libc.munmap(address, size)
        self.mappings.clear()
