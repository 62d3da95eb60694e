"""arrowdev's exception types.

Failures inside arrowdev derive from :class:`ArrowDevError`. Each also derives from the built-in
type a caller would catch without knowing arrowdev (``ValueError`` for bad data, ``RuntimeError``
for a missing device), so both ``except ArrowDevError`` and ``except ValueError`` work. Bad
arguments raise plain ``TypeError`` / ``ValueError`` worded "expected X, got Y".
"""

__all__ = ["ArrowDevError", "CaptureError", "InvalidArrowError", "DeviceUnavailableError", "MissingDependencyError"]


class ArrowDevError(Exception):
    """Base class of every failure raised by arrowdev itself."""


class InvalidArrowError(ArrowDevError, ValueError):
    """Arrow data or a capsule that breaks the Arrow C Data interface: a released or consumed
    struct, a malformed tree, a format string or buffer count that does not fit the type, offsets
    that run past the data."""


class DeviceUnavailableError(ArrowDevError, RuntimeError):
    """A GPU feature was asked for where no GPU, driver or GPU library (CuPy) is available."""


class MissingDependencyError(ArrowDevError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra to install
    (``pip install "arrowdev[udf]"``). GPU features missing a GPU package raise
    :class:`DeviceUnavailableError` instead."""


class CaptureError(ArrowDevError, RuntimeError):
    """Work inside ``ad.cuda.capture()`` that cannot be recorded as a CUDA graph (it needs host work
    between kernels, or has not been called often enough to be prepared), or a capture CUDA refused;
    the message names the reason and what to do."""
