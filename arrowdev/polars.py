"""arrowdev UDFs in Polars: the public name of :mod:`arrowdev.integrations.polars` (the guide is there)."""

from __future__ import annotations

from .integrations.polars import PolarsUDF, udf

__all__ = ["PolarsUDF", "udf"]
