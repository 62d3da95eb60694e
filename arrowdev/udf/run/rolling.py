"""Rolling windows: ``col.rolling(window, min_periods, center).apply(f)``.

Row i's window holds rows [i - window + 1, i] (``center=True``: rows [i - window // 2,
i + (window - 1) // 2], as pandas centres). ``f`` gets the window's non-null values as an array
(loop over it, index it, ``.sum()``, ``.mean()``, ``len``: whatever numba supports on arrays);
a window with fewer than ``min_periods`` values (default: ``window``) gives a null row, as pandas
does. A column of several chunks is concatenated first, so windows cross chunk boundaries (a copy).
"""

from __future__ import annotations

from typing import Any, Callable

from ..._capsules import ColumnCore
from ...core import chunks as _chunked


class Rolling:
    """Windows over a column; :meth:`apply` runs a UDF on each."""

    def __init__(self, column: ColumnCore, window: int, min_periods: int | None = None, center: bool = False, *,
                 make: Callable[[Any, list[Any]], ColumnCore] | None = None) -> None:
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"expected a window of at least 1 row, got {window!r}")
        if min_periods is None:
            min_periods = window
        if not isinstance(min_periods, int) or not 0 <= min_periods <= window:
            raise ValueError(f"expected 0 <= min_periods <= window ({window}), got {min_periods!r}")
        self.column, self.window, self.min_periods, self.center = column, window, min_periods, bool(center)
        # the column's own constructor, given by ArrowColumn.rolling (this layer imports no user object)
        self._make = make if make is not None else type(column)

    def apply(self, f: Callable, *, out_type: Any = None, stream: Any = None) -> ColumnCore:
        """``f(window_values)`` for every row; a new column on the same device."""
        return self._make(*self.result(f, out_type=out_type, stream=stream))

    def result(self, f: Callable, *, out_type: Any = None, stream: Any = None) -> tuple[Any, list[Any]]:
        """What :meth:`apply` makes a column of: the result's type and chunks."""
        from ..compile.arrow_types import element_dtype
        from .apply import apply_columns

        element_dtype(_chunked.dtype(self.column))  # windows are numeric or bool: anything else is refused here
        return apply_columns(f, [self.column], out_type=out_type, stream=stream,
                             window=(self.window, self.min_periods, self.center))

    def __repr__(self) -> str:
        return f"Rolling(window={self.window}, min_periods={self.min_periods}, center={self.center})"
