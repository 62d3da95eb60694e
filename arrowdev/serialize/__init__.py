"""Columns and tables as a small header plus frames of the rows in range: the one planner behind
pickling (protocol 5, out-of-band buffers) and distributed's ``dask`` and ``cuda`` serializer families
(:mod:`.frames`). The integrations above register it with their engines.
"""
