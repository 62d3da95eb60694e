"""arrowdev: Arrow data on GPUs (and CPUs), exchanged zero-copy with correct ownership.

>>> import pyarrow as pa
>>> import arrowdev as ad
>>> col = ad.column(pa.array([1, 2, None]))
>>> pa.array(col).to_pylist()
[1, 2, None]
"""

from . import _serialize, cuda, debug
from ._version import __version__
from .column import ArrowColumn, BufferInfo, column
from .errors import ArrowDevError, CaptureError, DeviceUnavailableError, InvalidArrowError, MissingDependencyError
from .table import ArrowTable, table
from .types import DataType, Device
from .udf import NA, UDFCompileError


def import_ipc(data: bytes) -> ArrowColumn | ArrowTable:
    """A column or table over another process's GPU memory (zero-copy), from the bytes its
    ``export_ipc()`` returned, holding a lease on that memory until its last array goes.
    InvalidArrowError when the export has ended or its process has gone. See :mod:`arrowdev.cuda.ipc`."""
    from .cuda.ipc import import_ipc as _import_ipc

    imported: ArrowColumn | ArrowTable = _import_ipc(data)
    return imported


def _register_with_distributed() -> None:
    """Registers arrowdev's serializers with distributed once it is imported (see arrowdev.dask): at
    ``import arrowdev`` in a Dask worker, and (a hook of the pickler, which sits below Dask's layer)
    the first time a process that imported arrowdev before distributed pickles an arrowdev object."""
    import sys

    if "distributed.protocol.serialize" in sys.modules and "arrowdev.dask._distributed" not in sys.modules:
        from .dask import _distributed  # noqa: F401  (registers on import)


_register_with_distributed()
_serialize.add_pickle_hook(_register_with_distributed)


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
