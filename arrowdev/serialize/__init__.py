"""Columns and tables as a small header plus frames of the rows in range: the one planner behind
pickling (protocol 5, out-of-band buffers) and distributed's ``dask`` and ``cuda`` serializer families
(:mod:`.frames`). The integrations above register it with their engines.

What arrives that way is checked before anything reads it (issue 30; docs/validation.md, "Received frames"):
:mod:`.checks` (the header and every frame against what each node needs), :mod:`.values` (the values inside
frames: in C on host frames, with CuPy on device frames) and :mod:`.ipc_checks` (CUDA IPC descriptions, before
and after mapping).
"""
