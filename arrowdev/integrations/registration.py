"""When arrowdev registers itself with distributed: at ``import arrowdev`` in a process that already
imported distributed (a Dask worker), and otherwise the first time the process pickles an arrowdev object
after importing distributed. The pickler (:mod:`arrowdev.serialize.frames`) sits below Dask's layer, so it
calls :func:`register_with_distributed` through a hook that :func:`install` gives it. Importing this
module imports neither dask nor distributed."""

from __future__ import annotations

import sys

from ..serialize import frames

__all__ = ["install", "register_with_distributed"]


def register_with_distributed() -> None:
    """Registers arrowdev's serializers (:mod:`arrowdev.integrations.dask._distributed`) once distributed
    is imported; nothing otherwise."""
    if ("distributed.protocol.serialize" in sys.modules
            and "arrowdev.integrations.dask._distributed" not in sys.modules):
        from .dask import _distributed  # noqa: F401  (registers on import)


def install() -> None:
    """Registers now if distributed is imported, and from the pickler's hook later."""
    register_with_distributed()
    frames.add_pickle_hook(register_with_distributed)
