"""What the tests share, apart from the tests themselves (pytest puts ``tests/`` on the path, so tests
import ``from support.samples import CASES``; the modules import one another relatively).

- :mod:`support.samples`: sample arrays of every Arrow type, the layouts (sliced, chunked) tests run them
  in, the devices the UDF tests run on, and ``with_ipc_header`` for CUDA IPC handles.
- :mod:`support.cabi`: the Arrow C Data / C Device Data / C Stream ABI as ctypes structs, release-counting
  producers of hand-made structs, and PyCapsule helpers (for tests that build structs arrowdev has never
  seen, or read the structs inside arrowdev's capsules).
- :mod:`support.counting_producer`: a nested producer built on :mod:`support.cabi` whose nodes count
  their release calls, so "released exactly once" is checked per node (the ownership tests).
- :mod:`support.fuzz_arrow`: the import fuzzer: one case per seed, malformed and valid structs handed to
  arrowdev, every producer node's releases checked (``python3 -m tests.support.fuzz_arrow SEED`` from the
  repository's root reruns one case).
- :mod:`support.fuzz_frames`: the frame fuzzer (issue 30): one case per seed, a sample serialized through one
  of arrowdev's wrappings (:mod:`support.fuzz_wrap`), its frames and header mutated (:mod:`support.fuzz_mutate`),
  the frames placed next to unreadable pages (:mod:`support.guarded`), received and used
  (``python3 -m tests.support.fuzz_frames SEED`` reruns one case).
- :mod:`support.fuzz_run`: runs a fuzzer's seeds in child processes (a crash or a hang is counted with its seed)
  and sums their figures; tests/test_fuzz_import.py, tests/test_fuzz_frames.py and benchmarks/fuzz_import.py,
  benchmarks/fuzz_frames.py use it.
- :mod:`support.scripts`: ``run_script``, a script in a fresh interpreter, for what happens once per
  process (numba's memory manager, the first CUDA context, CUDA IPC, NRT statistics); ``Children``, child
  interpreters that answer commands (importers and exporters that hold, release, die or exit on cue), and
  ``wait_for``.
- :mod:`support.host_udfs`: the UDFs the host tests share (Polars, DuckDB, pandas), one definition each.
- :mod:`support.fake_ipc`: CUDA IPC without a GPU (host memory as allocations, fake handles), for the tests
  of the lease wiring (tests/test_publish.py).
"""
