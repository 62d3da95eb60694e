"""arrowdev UDFs over pandas data: the public name of :mod:`arrowdev.integrations.pandas` (the guide is there)."""

from __future__ import annotations

from .integrations.pandas import apply

__all__ = ["apply"]
