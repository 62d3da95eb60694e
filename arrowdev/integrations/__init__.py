"""Engine hosts: arrowdev inside the engines users already run, one module or package per engine, none
built on another (what they share sits in :mod:`.batches`):

- :mod:`.dask`: collections of ArrowTable partitions, serializers for distributed, UDFs in dask.dataframe;
- :mod:`.ray`: UDFs in Ray Data; :mod:`.spark`: UDFs through ``mapInArrow``;
- :mod:`.polars`: UDFs in Polars expressions; :mod:`.duckdb`: UDFs as DuckDB functions; :mod:`.pandas`: UDFs
  over pandas Series and frames (docs/hosts.md).

Users reach them by their public names, ``arrowdev.dask``, ``arrowdev.ray``, ``arrowdev.spark``,
``arrowdev.polars``, ``arrowdev.duckdb`` and ``arrowdev.pandas``
(small facade modules at the package root). They sit above the user objects and import them.
"""
