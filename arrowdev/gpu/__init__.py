"""The CUDA runtime as arrowdev uses it, below the core: it knows devices, streams, events and bytes,
never Arrow types or columns.

- :mod:`.runtime`: CuPy and the driver found or refused, devices, streams, sync events, small reads;
- :mod:`.memory`: the one accounted device pool (and RMM where configured), pinned host buffers;
- :mod:`.staging`: host-to-device copies of pageable memory through a ring of pinned buffers.

The column-aware device API that users call (copies of columns, IPC, captured calls, numba's memory
manager) is :mod:`arrowdev.cuda`, above the core.
"""
