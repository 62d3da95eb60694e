"""Adapters between arrowdev and other libraries, one small module per ecosystem.

They translate and own nothing: every object they hand out keeps arrowdev's containers alive
through the PyCapsule protocols. PyArrow, Polars and nanoarrow need no adapter beyond the
protocols themselves (``pa.array(col)``, ``pl.Series(col)``, ``nanoarrow.Array(col)``);
:mod:`arrowdev.interop.pyarrow` holds the few operations arrowdev delegates to PyArrow.
"""
