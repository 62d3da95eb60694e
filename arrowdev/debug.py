"""Counters for checking that imports and releases balance.

>>> import pyarrow as pa, arrowdev as ad
>>> before = ad.debug.ownership_stats()
>>> col = ad.column(pa.array([1, 2, 3]))
>>> ad.debug.ownership_stats()["live_containers"] - before["live_containers"]
1
>>> del col
>>> ad.debug.ownership_stats()["live_containers"] - before["live_containers"]
0
"""

from __future__ import annotations

from . import _capsules

__all__ = ["ownership_stats"]


def ownership_stats() -> dict[str, int]:
    """The native core's counters.

    - ``live_containers``: arrays held now (imports minus producer releases).
    - ``imports`` / ``producer_releases``: arrays moved in / producer release callbacks called,
      since the process started.
    - ``live_exported_nodes``: nodes handed to consumers and not yet released by them.
    - ``live_exported_streams``: exported streams not yet released.
    - ``live_built_nodes``: arrays arrowdev assembled itself (e.g. record batches of a table)
      that are not yet released.
    """
    return _capsules.ownership_stats()
