"""String UDFs: device strings read in place, new strings made by UDFs (managed strings from a per-launch
arena), and the string operations numba compiles for them (docs/strings.md has the list and the lifecycle).

A row of a ``string``, ``large_string`` or ``string_view`` column reaches a UDF as a ``StringView`` (a
pointer into the column's own buffers and a byte count, no copy); what a UDF makes is a ``ManagedString``
(an NRT MemInfo, a pointer and a byte count); every operation equals Python's ``str`` on valid UTF-8.

Layout, after numba-cuda's extension modules: ``types`` (the numba types), ``models`` (data models),
``typing`` (signatures), ``lowering`` (read-only operations, and registration of everything),
``operations`` (operations that make or parse strings), ``managed`` (arena allocation, MemInfo headers,
views, row failure flags), ``words`` (reads and writes eight bytes at a time: the writer new strings are
written through), ``tables`` (Unicode tables in device memory), ``literals`` (the front-end step
for string constants), ``layout`` (MemInfo and arena-state layouts), ``refcounts`` (a managed string's
MemInfo counted in line on the GPU), ``names`` (operation names typing and lowering share). The host side
(arena, re-runs, Arrow string arrays) is ``arrowdev.udf.run.string_results``.
Each registers with one target at a time, numba's CPU target or numba-cuda's CUDA target, on first use,
into typing and lowering registries of arrowdev's own for that target (``arrowdev.udf.compile.targets``), never
numba's global ones.
"""

from __future__ import annotations

import threading
from typing import Any

from .literals import Utf8Constant, with_string_constants

__all__ = ["Utf8Constant", "intrinsics", "with_string_constants"]


class _Targets(dict):
    """Each target's intrinsics by name, registered on first use of that target."""

    def __missing__(self, name: str) -> dict[str, Any]:
        with _REGISTERING:  # one thread registers a target; the others wait and find it done
            if name in self:
                return self[name]
            return self._register(name)

    def _register(self, name: str) -> dict[str, Any]:
        from ....errors import DeviceUnavailableError, install_hint
        from .lowering import register_lowering
        from .models import register_models
        from ..targets import cpu_target, cuda_target
        from .typing import register_typing

        target = cpu_target() if name == "cpu" else cuda_target()
        if target is None:
            raise DeviceUnavailableError(f"string UDFs on GPU columns need numba-cuda: {install_hint('cuda13')}")
        register_models(target)
        if name == "cuda":
            from .refcounts import install_in_line_counts

            install_in_line_counts()
        else:  # the CPU kernels' per-thread slots, which their code calls by this name
            from .managed import register_cpu_slots

            register_cpu_slots()
        register_typing(target)
        intrinsics = register_lowering(target)
        target.install()  # into this target's contexts only: numba's global registries get nothing
        self[name] = intrinsics
        return intrinsics


_REGISTERING = threading.RLock()
_TARGETS = _Targets()


def intrinsics() -> dict[str, dict[str, Any]]:
    """The string types' intrinsics per target name ('cpu', 'cuda'): ``intrinsics()[target]`` registers
    the types and operations with that target on first use (CPU UDFs never import numba-cuda)."""
    return _TARGETS
