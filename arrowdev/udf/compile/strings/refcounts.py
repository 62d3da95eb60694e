"""Reference counts of managed strings in CUDA kernels: NRT's counts, without NRT's fences.

numba-cuda's ``NRT_incref`` / ``NRT_decref`` are out-of-line calls into its runtime library, and their count
changes are ``cuda::atomic`` operations in the default, sequentially consistent order: each one is a
device-wide fence. Nsight Compute put 45% of the concat kernel's warp stalls on those fences
(docs/strings.md). They order nothing here: a managed string never leaves the thread that made it (a UDF
cannot hand a value to another thread; the kernel stores only the bytes' address and size), so its count
is read and written by one thread only.

For the MemInfo of a managed string (type ``StringMemInfo``, types.py) the CUDA lowering therefore changes the
count in line, with a plain load and store (one thread: no atomic needed, and the compiler may fold an
increment with the decrement after it), and calls ``NRT_MemInfo_call_dtor`` when a decrement takes it to
zero, as ``NRT_decref`` does: the same counts at every point, the same destructor calls. Every other MemInfo
(arrays a UDF allocates) still goes through NRT's own functions. The CPU target keeps NRT's functions for
all (numba inlines them there and prunes pairs).

Invariant: a ``StringMemInfo`` is only ever reached by the thread whose kernel code made it.
"""

from __future__ import annotations

from typing import Any

from .numba_types import string_types

__all__ = ["install_in_line_counts"]


def install_in_line_counts() -> None:
    """Makes numba-cuda's lowering count string MemInfos in line (module docstring); once per process."""
    from numba.cuda.memory_management import nrt_context

    cls = nrt_context.NRTContext
    original = cls._call_incref_decref
    if getattr(original, "arrowdev_in_line", False):
        return
    string_class = string_types().StringMemInfo

    def call_incref_decref(self: Any, builder: Any, typ: Any, value: Any, funcname: str) -> None:
        meminfos = self.get_meminfos(builder, typ, value)
        if not any(isinstance(ty, string_class) for ty, _ in meminfos):
            return original(self, builder, typ, value, funcname)
        self._require_nrt()
        for ty, meminfo in meminfos:
            if isinstance(ty, string_class):
                _count_in_line(builder, meminfo, increment=funcname == "NRT_incref")
            else:
                _call_nrt(builder, meminfo, funcname)

    call_incref_decref.arrowdev_in_line = True  # type: ignore[attr-defined]
    cls._call_incref_decref = call_incref_decref


def _call_nrt(builder: Any, meminfo: Any, funcname: str) -> None:
    from numba.cuda import cgutils
    from numba.cuda.memory_management.nrt_context import incref_decref_ty

    builder.call(cgutils.get_or_insert_function(builder.module, incref_decref_ty, funcname), [meminfo])


def _count_in_line(builder: Any, meminfo: Any, increment: bool) -> None:
    """``refct += 1`` or ``refct -= 1`` (then the destructor at zero) on a MemInfo that may be NULL; the count
    is the MemInfo's first field, a size_t (strings/layout.py)."""
    from llvmlite import ir
    from numba.cuda import cgutils

    i64 = ir.IntType(64)
    one = ir.Constant(i64, 1)
    with builder.if_then(cgutils.is_not_null(builder, meminfo), likely=True):
        count = builder.bitcast(meminfo, i64.as_pointer())
        after = (builder.add if increment else builder.sub)(builder.load(count), one)
        builder.store(after, count)
        if increment:
            return
        with builder.if_then(builder.icmp_unsigned("==", after, ir.Constant(i64, 0)), likely=False):
            from numba.cuda.memory_management.nrt_context import incref_decref_ty

            dtor = cgutils.get_or_insert_function(builder.module, incref_decref_ty, "NRT_MemInfo_call_dtor")
            builder.call(dtor, [meminfo])
