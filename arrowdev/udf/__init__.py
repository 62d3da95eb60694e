"""Python UDFs on Arrow columns, compiled with numba (CPU columns) or numba-cuda (GPU columns).

>>> import pyarrow as pa, arrowdev as ad
>>> col = ad.column(pa.array([1, None, 3]))
>>> col.apply(lambda x: x * 2 + 1).to_pylist()
[3, None, 7]
>>> col.apply(lambda x: 0 if x is ad.NA else x, null_aware=True).to_pylist()
[1, 0, 3]
>>> ad.column(pa.array([1.0, 2.0, 4.0, None, 8.0])).rolling(2, min_periods=1).apply(lambda w: w.sum()).to_pylist()
[1.0, 3.0, 6.0, 4.0, 8.0]
"""

from .compile.compile_errors import UDFCompileError
from .na import NA, NAType
from .run.rolling import Rolling

__all__ = ["NA", "NAType", "Rolling", "UDFCompileError"]
