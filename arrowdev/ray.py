"""arrowdev on Ray: the public name of :mod:`arrowdev.integrations.ray` (the guide is there)."""

from __future__ import annotations

from .integrations.ray import batch_udf

__all__ = ["batch_udf"]
