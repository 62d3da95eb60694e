"""Rolling windows: ``col.rolling(window, min_periods, center).apply(f)``.

Row i's window holds rows [i - window + 1, i] (``center=True``: rows [i - window // 2,
i + (window - 1) // 2], as pandas centres). ``f`` gets the window's non-null values as an array
(loop over it, index it, ``.sum()``, ``.mean()``, ``len``: whatever numba supports on arrays);
a window with fewer than ``min_periods`` values (default: ``window``) gives a null row, as pandas
does. A column of several chunks is concatenated first, so windows cross chunk boundaries (a copy).
"""

from __future__ import annotations

from typing import Any, Callable

from .._capsules import ColumnCore


class Rolling:
    """Windows over a column; :meth:`apply` runs a UDF on each."""

    def __init__(self, column: ColumnCore, window: int, min_periods: int | None = None, center: bool = False) -> None:
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"expected a window of at least 1 row, got {window!r}")
        if min_periods is None:
            min_periods = window
        if not isinstance(min_periods, int) or not 0 <= min_periods <= window:
            raise ValueError(f"expected 0 <= min_periods <= window ({window}), got {min_periods!r}")
        self.column, self.window, self.min_periods, self.center = column, window, min_periods, bool(center)

    def apply(self, f: Callable, *, out_type: Any = None, stream: Any = None) -> ColumnCore:
        """``f(window_values)`` for every row; a new column on the same device."""
        from .apply import apply_columns

        from .types import element_dtype

        col = self.column
        element_dtype(col.type)  # windows are numeric or bool: anything else is refused here
        if col.num_chunks > 1:
            col = col.combine_chunks()  # windows cross chunk boundaries: one chunk (a copy)
        return apply_columns(f, [col], out_type=out_type, stream=stream,
                             window=(self.window, self.min_periods, self.center))

    def __repr__(self) -> str:
        return f"Rolling(window={self.window}, min_periods={self.min_periods}, center={self.center})"
