"""A Python UDF made into a kernel: typed by a probe (:mod:`.probe`), its kernel's source generated
(:mod:`.codegen`), compiled by numba or numba-cuda (:mod:`.kernels`) and kept in memory and on disk
(:mod:`.cache`); :mod:`.plan` says what a UDF over given inputs compiles to. The numba extensions the
compiled code uses live here too: arrowdev's typing and lowering registries per target (:mod:`.targets`),
Arrow types as numba sees them (:mod:`.arrow_types`), constant sets, streaming loads, and strings
(:mod:`.strings`: how compiled code reads and makes strings). Nothing here runs a kernel: that is
:mod:`arrowdev.udf.run`, above.
"""
