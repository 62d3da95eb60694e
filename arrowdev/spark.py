"""arrowdev on Spark: the public name of :mod:`arrowdev.integrations.spark` (the guide is there)."""

from __future__ import annotations

from .integrations.spark import arrow_udf, with_column

__all__ = ["arrow_udf", "with_column"]
