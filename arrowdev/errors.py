"""arrowdev's exception types.

Failures inside arrowdev derive from :class:`ArrowDevError`. Each also derives from the built-in
type a caller would catch without knowing arrowdev (``ValueError`` for bad data, ``RuntimeError``
for a missing device), so both ``except ArrowDevError`` and ``except ValueError`` work. Bad
arguments raise plain ``TypeError`` / ``ValueError`` worded "expected X, got Y".
"""

__all__ = ["ArrowDevError", "CaptureError", "InvalidArrowError", "DeviceUnavailableError", "MissingDependencyError",
           "install_hint"]


class ArrowDevError(Exception):
    """Base class of every failure raised by arrowdev itself."""


class InvalidArrowError(ArrowDevError, ValueError):
    """Arrow data or a capsule that breaks the Arrow C Data interface: a released or consumed
    struct, a malformed tree, a format string or buffer count that does not fit the type, offsets
    that run past the data; and received frames or CUDA IPC descriptions that do not fit their header
    (the message names the node's path, the frame and what was expected)."""


class DeviceUnavailableError(ArrowDevError, RuntimeError):
    """A GPU feature was asked for where no GPU, driver or GPU library (CuPy) is available."""


class MissingDependencyError(ArrowDevError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra to install
    (:func:`install_hint`: ``pip install "arrowdev[udf]"``, or from a checkout ``pip install -e ".[udf]"``).
    GPU features missing a GPU package raise :class:`DeviceUnavailableError` instead."""


class CaptureError(ArrowDevError, RuntimeError):
    """Work inside ``ad.cuda.capture()`` that cannot be recorded as a CUDA graph (it needs host work
    between kernels, or has not been called often enough to be prepared), or a capture CUDA refused;
    the message names the reason and what to do."""


def install_hint(extra: str) -> str:
    """How to install an extra, for error messages: from a checkout installed in editable mode (the README's
    quick start), the command for that checkout; otherwise both forms, the package index's and a checkout's
    (arrowdev is not on the index yet).

    >>> "arrowdev[udf]" in install_hint("udf") or ".[udf]" in install_hint("udf")
    True
    """
    checkout = _editable_checkout()
    if checkout is not None:
        return f'pip install -e "{checkout}[{extra}]" (this checkout, installed in editable mode)'
    return f'pip install "arrowdev[{extra}]", or from a checkout of arrowdev: pip install -e ".[{extra}]"'


def _editable_checkout() -> str | None:
    """The folder arrowdev is installed from in editable mode (pip's direct_url.json), else None."""
    import json
    from importlib import metadata

    try:
        text = metadata.distribution("arrowdev").read_text("direct_url.json")
        info = json.loads(text) if text else {}
    except (metadata.PackageNotFoundError, ValueError):
        return None
    url = info.get("url", "")
    if not info.get("dir_info", {}).get("editable") or not url.startswith("file://"):
        return None
    import os
    from urllib.parse import unquote, urlparse

    checkout = unquote(urlparse(url).path)
    here = os.path.dirname(os.path.abspath(__file__))  # the arrowdev running (PYTHONPATH may name another tree)
    try:
        return checkout if os.path.samefile(os.path.join(checkout, "arrowdev"), here) else None
    except OSError:
        return None
