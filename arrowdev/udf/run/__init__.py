"""A compiled UDF run over Arrow columns: input chunks aligned (:mod:`.chunks`) and read in place
(:mod:`.inputs`), buffers and launches on the target (:mod:`.buffers`, :mod:`.launch`), one chunk's launch
(:mod:`.execute`) and output (:mod:`.output`, :mod:`.validity`, :mod:`.string_results` for new strings),
the entry points (:mod:`.apply`, :mod:`.rolling`) and calls prepared for repeats (:mod:`.prepared_calls`).
It uses :mod:`arrowdev.udf.compile`, below, and never the other way round.
"""
