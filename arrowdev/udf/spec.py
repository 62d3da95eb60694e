"""What a UDF kernel is compiled for (:class:`KernelSpec`), what typing found out about a UDF
(:class:`UDFTraits`), and a UDF's identity for the in-process caches (:func:`function_key`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["KernelSpec", "UDFTraits", "function_key"]


@dataclass(frozen=True)
class KernelSpec:
    """What a kernel is compiled for. ``inputs``: per input (NumPy dtype string or 'bits',
    has validity); ``out``: NumPy dtype string or 'bits'; ``window``: rolling window size or 0."""

    inputs: tuple[tuple[str, bool], ...]
    null_mode: str
    out: str
    target: str
    window: int = 0
    min_periods: int = 0
    center: bool = False
    arena: bool = False  # the UDF makes strings (or may fail a row): each row starts with begin_row
    flags: bool = False  # the kernel writes out_valid for every row (string outputs, rows that may fail)


@dataclass(frozen=True)
class UDFTraits:
    """What typing and lowering found out about a UDF: its result type, whether it allocates managed
    strings (needs an arena) and whether a row may fail (``int("x")``: the row becomes null)."""

    result: Any
    allocates: bool
    may_fail: bool


def function_key(f: Callable) -> tuple:
    """Identity of a UDF for caching: its code, defaults and closure values (by value when
    hashable, else by identity)."""
    cells = []
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
            hash(value)
            cells.append(value)
        except (ValueError, TypeError):
            cells.append(id(cell))
    return (f.__code__, f.__defaults__, tuple(cells))
