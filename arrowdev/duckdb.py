"""arrowdev UDFs in DuckDB: the public name of :mod:`arrowdev.integrations.duckdb` (the guide is there)."""

from __future__ import annotations

from .integrations.duckdb import register

__all__ = ["register"]
