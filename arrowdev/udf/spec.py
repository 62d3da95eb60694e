"""What a UDF kernel is compiled for (:class:`KernelSpec`), what typing found out about a UDF
(:class:`UDFTraits`), and a UDF's identity for the in-process caches (:func:`function_key`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

__all__ = ["UDF", "Kind", "KernelSpec", "NullMode", "Target", "UDFTraits", "function_key"]


class _Named(str, Enum):
    """An enum whose members equal, and hash like, their string values (so a spec spelled with strings, as
    tests and callers may write it, is the same spec), and print as them."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)

    __format__ = str.__format__


class Target(_Named):
    """What numba compiles a kernel for."""

    CPU = "cpu"
    CUDA = "cuda"


class NullMode(_Named):
    """How a kernel treats null inputs (codegen.py's docstring)."""

    NONE = "none"  # no input has nulls: every row is computed
    PROPAGATE = "propagate"  # a row with a null input is skipped; the output validity is made outside
    AWARE = "aware"  # nullable inputs are Optional (ad.NA); the kernel writes each row's validity


class Kind(_Named):
    """How a kernel reads an input or writes its output: a NumPy element type, bits, a string layout, or
    (outputs only) a bool result voted into bits by warp ballots, or strings as (address, size) pairs."""

    INT8 = "|i1"
    INT16 = "<i2"
    INT32 = "<i4"
    INT64 = "<i8"
    UINT8 = "|u1"
    UINT16 = "<u2"
    UINT32 = "<u4"
    UINT64 = "<u8"
    FLOAT16 = "<f2"
    FLOAT32 = "<f4"
    FLOAT64 = "<f8"
    BITS = "bits"
    UTF8_32 = "utf8_32"  # string: int32 offsets
    UTF8_64 = "utf8_64"  # large_string: int64 offsets
    UTF8_VIEW = "utf8_view"  # string_view: 16-byte views
    BALLOT = "ballot"  # output: bool bits written by warp votes
    UTF8_PAIRS = "utf8_pairs"  # output: (address, size) per row, gathered into Arrow buffers after

    @property
    def is_string(self) -> bool:
        return self in (Kind.UTF8_32, Kind.UTF8_64, Kind.UTF8_VIEW, Kind.UTF8_PAIRS)

    @property
    def numpy(self) -> Any:
        """The NumPy dtype of a numeric kind; None for the others."""
        import numpy as np

        return np.dtype(self.value) if self.value[0] in "<|" else None


@dataclass(frozen=True)
class KernelSpec:
    """What a kernel is compiled for. ``inputs``: per input (:class:`Kind`, has validity); ``out``: the
    output's :class:`Kind` (None in the spec of a typing probe, which makes no kernel); ``window``: rolling
    window size or 0. Strings are accepted for every kind and stored as the enum members."""

    inputs: tuple[tuple[Kind, bool], ...]
    null_mode: NullMode
    out: Kind | None
    target: Target
    window: int = 0
    min_periods: int = 0
    center: bool = False
    arena: bool = False  # the UDF makes strings (or may fail a row): each row starts with begin_row
    flags: bool = False  # the kernel writes out_valid for every row (string outputs, rows that may fail)

    def __post_init__(self) -> None:
        fields = {"inputs": tuple((Kind(kind), bool(valid)) for kind, valid in self.inputs),
                  "null_mode": NullMode(self.null_mode), "out": Kind(self.out) if self.out else None,
                  "target": Target(self.target)}
        for name, value in fields.items():
            object.__setattr__(self, name, value)


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


class UDF:
    """A UDF with the keys its caches find it by, computed once per call and handed down (``apply`` ->
    ``plan`` -> ``kernels`` -> ``probe`` -> ``cache``): ``key``, its identity in this process
    (:func:`function_key`), and ``digest``, its identity on disk (``compile/cache.py`` computes it on
    first use and keeps it here; None where the UDF cannot be cached on disk)."""

    __slots__ = ("f", "key", "digest", "has_digest")

    def __init__(self, f: Callable) -> None:
        self.f = f
        self.key = function_key(f)
        self.digest: str | None = None
        self.has_digest = False

    @classmethod
    def of(cls, f: Callable | UDF) -> UDF:
        """``f`` itself when it is one already, else ``f`` identified."""
        return f if isinstance(f, UDF) else cls(f)
