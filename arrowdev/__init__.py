"""arrowdev: Arrow data on GPUs (and CPUs), exchanged zero-copy with correct ownership.

>>> import pyarrow as pa
>>> import arrowdev as ad
>>> col = ad.column(pa.array([1, 2, None]))
>>> pa.array(col).to_pylist()
[1, 2, None]
"""

from . import cuda, debug
from ._version import __version__
from .column import ArrowColumn, BufferInfo, column
from .errors import ArrowDevError, CaptureError, DeviceUnavailableError, InvalidArrowError, MissingDependencyError
from .table import ArrowTable, table
from .core.types import DataType, Device
from .integrations import registration as _registration
from .udf import NA, UDFCompileError


def import_ipc(data: bytes) -> ArrowColumn | ArrowTable:
    """A column or table over another process's GPU memory (zero-copy), from the bytes its
    ``export_ipc()`` returned, holding a lease on that memory until its last array goes.
    InvalidArrowError when the export has ended or its process has gone. See :mod:`arrowdev.cuda.ipc`."""
    from .cuda.ipc import import_ipc as _import_ipc

    imported: ArrowColumn | ArrowTable = _import_ipc(data)
    return imported


_registration.install()


__all__ = [
    "ArrowColumn",
    "ArrowDevError",
    "CaptureError",
    "ArrowTable",
    "BufferInfo",
    "DataType",
    "Device",
    "DeviceUnavailableError",
    "InvalidArrowError",
    "MissingDependencyError",
    "NA",
    "UDFCompileError",
    "__version__",
    "column",
    "cuda",
    "debug",
    "import_ipc",
    "table",
]
