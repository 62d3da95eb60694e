"""arrowdev UDFs in Polars expressions: a Python function compiled by numba (or numba-cuda), run over whole
Series where ``map_elements`` runs it once per row in the interpreter.

:func:`udf` with column names (or expressions) makes an expression; without, the function for
``Expr.map_batches``::

    df.with_columns(y=arrowdev.polars.udf(f, "a", "b"))            # f(a, b) row by row; eager or lazy
    df.with_columns(y=pl.col("x").map_batches(arrowdev.polars.udf(g)))
    df.with_columns(y=pl.struct("a", "b").map_batches(arrowdev.polars.udf(f)))   # a struct's fields: f's args
    df.group_by("k").agg(arrowdev.polars.udf(g, "x"))              # a list per group
    df.with_columns(y=arrowdev.polars.udf(f, "a", "b", device="cuda"))           # on the GPU

The Series come in zero-copy (the Arrow stream Polars exports); nulls give nulls unless ``null_aware=True``
(``f`` then sees ``ad.NA``); numbers come back zero-copy, strings as ``string_view``, Polars' own layout.
docs/hosts.md is the guide, with what Polars' GPU engine can and cannot hand over.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any

from ..core.types import DataType
from .batches import HostUDF, engine, kept_per_function

__all__ = ["PolarsUDF", "udf"]

_ABSENT = object()  # a Polars that passes no return_dtype: every call is a run
_PLANS_KEPT = 64  # planning answers kept per function and options (per name, input dtypes and rows)
_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # HostUDF -> {(name, dtypes, rows): Series}
_calls: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # f -> {options: PolarsUDF} (_shared_call)


class PolarsUDF:
    """The function ``Expr.map_batches`` / ``pl.map_batches`` calls: ``f`` row by row over the Series it is
    given (several Series, or the fields of one struct Series, are ``f``'s arguments in order); a Series of
    the results, named after the first input."""

    def __init__(self, f: Callable[..., Any], *, device: Any = None, null_aware: bool = False,
                 out_type: Any = None, string_type: str = "string_view") -> None:
        self.udf = HostUDF.shared(f, host="Polars", device=device, null_aware=null_aware,
                                  out_type=_arrow_type(out_type), string_type=string_type)
        # Polars' planning calls' answers, per (name, input dtypes, rows), kept with the shared HostUDF: an
        # expression written inline is a new one each query, planned again each time
        self._plans = _plans.setdefault(self.udf, {})

    def __call__(self, series: Any, *args: Any, return_dtype: Any = _ABSENT, **kwargs: Any) -> Any:
        """The results over ``series`` (a Series, a struct Series or a list of Series, as Polars passes them).
        Polars passes ``return_dtype``: None when it calls to learn the result type (two rows of default
        values), the planned type when it runs the query."""
        import polars as pl

        if args or kwargs:
            raise TypeError(f"expected the Series Polars passes to map_batches, got extra arguments "
                            f"{[*args, *kwargs]}")
        inputs = list(series) if isinstance(series, (list, tuple)) else [series]
        dtypes = [s.dtype for s in inputs]  # each a new object from Polars: asked once
        if len(inputs) == 1 and isinstance(dtypes[0], pl.Struct):  # pl.struct("a", "b").map_batches
            inputs = inputs[0].struct.unnest().get_columns()  # struct.field() builds a query per field: 25 us each
            dtypes = [s.dtype for s in inputs]
        if return_dtype is not None and self._numbers(inputs, dtypes):
            # numbers without nulls: zero-copy NumPy arrays, straight to a prepared call
            values = self.udf.numpy_call([s.to_numpy() for s in inputs])
            if values is not None:
                return pl.Series(inputs[0].name, values)  # zero-copy: the Series holds the array
        names, shown = [s.name for s in inputs], [str(dtype) for dtype in dtypes]
        if return_dtype is None:
            key = (names[0], tuple(shown), len(inputs[0]))
            planned = self._plans.get(key)
            if planned is None:
                planned = self._planned(inputs, names, shown, key[2])
                if len(self._plans) >= _PLANS_KEPT:
                    self._plans.clear()
                self._plans[key] = planned
            return planned
        # the stream capsule, not the Series: Polars' attribute lookups of the protocols it lacks are slow
        streams = [s.__arrow_c_stream__() for s in inputs]
        result = self.udf(streams, names, shown)
        if not result.device.is_cpu_readable:
            result = result.to_host()
        return pl.Series(names[0], result)

    def _numbers(self, inputs: list[Any], dtypes: list[Any]) -> bool:
        """Whether every input is a Series of numbers without nulls in one chunk (``to_numpy`` is zero-copy) and
        the UDF runs where the data is (``dtypes``: the inputs' dtypes)."""
        numbers = _numbers()
        return self.udf.device in (None, "cpu") and all(
            type(dtype) in numbers and s.n_chunks() == 1 and not s.null_count() for s, dtype in zip(inputs, dtypes))

    def _planned(self, inputs: list[Any], names: list[str], shown: list[str], rows: int) -> Any:
        """Polars' planning call: the result type from the inputs' types (the UDF compiled for them, not run
        on Polars' stand-in values). Polars hides errors raised here behind one of its own ("not able to
        infer the output type"), so a UDF that cannot take these types gets a Null result type here, and the
        query's run raises the error that says why."""
        import polars as pl

        from ..column import column

        columns = [column(s.__arrow_c_stream__()) for s in inputs]
        try:
            planned = self.udf.result_type([c.type for c in columns], names, shown)
        except TypeError:
            return pl.Series(names[0], [None] * rows, dtype=pl.Null)
        # Polars takes the type from this Series, not its values: nulls of the planned type (running the UDF on
        # the stand-ins too cost a query about 70 us, and a UDF may fail on them: 1, "", False)
        return pl.Series(names[0], [None] * rows, dtype=polars_dtype(planned))

    def return_dtype(self) -> Any:
        """The Polars dtype of ``out_type`` (None where the UDF's own typing decides)."""
        out_type = self.udf.options["out_type"]
        return None if out_type is None else polars_dtype(out_type)


def udf(f: Callable[..., Any], *columns: Any, device: Any = None, null_aware: bool = False, out_type: Any = None,
        string_type: str = "string_view") -> Any:
    """``f`` as Polars calls it: with ``columns`` (names or expressions; ``f`` takes one argument per column)
    an expression of ``f(a, b, ...)`` row by row; without, the function to hand ``map_batches``.

    ``device``: None runs it where the data is (Polars' Series are in host memory: numba's CPU target);
    "cuda" (or a GPU index) copies the Series to the GPU, runs a CUDA kernel there and copies the result back.
    ``out_type`` (an Arrow or Polars type) fixes the result type; otherwise Polars asks for it when it plans
    the query (a call on two rows of stand-in values), and the answer is the type the UDF returns for the
    columns' types: it is compiled for them there (and not judged by its results on the stand-ins). New
    strings come back as ``string_type``; ``string_view`` is Polars' own string layout.

    >>> import polars as pl, arrowdev as ad
    >>> df = pl.DataFrame({"a": [1.0, -2.0, None], "b": [10, 20, 30]})
    >>> df.with_columns(y=ad.polars.udf(lambda a, b: a * b if a > 0 else b, "a", "b"))["y"].to_list()
    [10.0, 20.0, None]
    """
    pl = engine("polars", "polars")
    call = _shared_call(f, device=device, null_aware=null_aware, out_type=out_type, string_type=string_type)
    if not columns:
        return call
    names = [c for group in columns for c in (group if isinstance(group, (list, tuple)) else [group])]
    return pl.map_batches(names, call, return_dtype=call.return_dtype(), **_elementwise())


def _shared_call(f: Callable[..., Any], **options: Any) -> PolarsUDF:
    """The :class:`PolarsUDF` of ``f`` with these options, kept while ``f`` lives (it holds nothing of its own: its
    HostUDF and planning answers are shared already; an expression written inline makes one per query). A new
    one where ``out_type`` is given: Polars' dtypes compare equal across time units and zones
    (``pl.Datetime("ms") == pl.Datetime``), so they cannot key a table."""
    if options.get("out_type") is not None:
        return PolarsUDF(f, **options)
    return kept_per_function(_calls, f, options, lambda: PolarsUDF(f, **options))


@functools.cache
def _elementwise() -> dict[str, bool]:
    """``is_elementwise=True`` where this Polars takes it (row-wise: Polars may run the UDF on any slice of the
    rows, streaming engine and groups, and join the results); asked of Polars once."""
    import polars as pl

    return {"is_elementwise": True} if "is_elementwise" in inspect.signature(pl.map_batches).parameters else {}


@functools.cache
def _numbers() -> frozenset:
    """Polars' dtype classes of numbers, whose Series without nulls ``to_numpy`` hands over zero-copy (a Series'
    dtype is an instance of one: its class is looked up by identity, where an instance's own hash and ``==`` are
    Python code)."""
    import polars as pl

    return frozenset([pl.Float32, pl.Float64, pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32,
                      pl.UInt64])


def _arrow_type(out_type: Any) -> Any:
    """``out_type`` as an Arrow type where it is a Polars dtype (``pl.Float32``); as it is otherwise."""
    import polars as pl

    if isinstance(out_type, pl.DataType) or isinstance(out_type, type) and issubclass(out_type, pl.DataType):
        try:
            return _arrow_of_polars(out_type)
        except TypeError:  # a dtype that cannot be hashed: asked of Polars each time
            return pl.Series([], dtype=out_type).to_arrow().type
    return out_type


@functools.lru_cache(maxsize=64)
def _arrow_of_polars(dtype: Any) -> Any:
    """The Arrow type of a Polars dtype, as Polars converts an empty Series of it (kept: an expression written
    inline with ``out_type`` asked Polars each query, about 10 us)."""
    import polars as pl

    return pl.Series([], dtype=dtype).to_arrow().type


def polars_dtype(arrow_type: Any) -> Any:
    """The Polars dtype Polars makes of an Arrow type (``pl.from_arrow`` of an empty array of it; kept per type)."""
    return _polars_dtype_of(DataType.from_arrow(arrow_type).to_pyarrow())


@functools.cache
def _polars_dtype_of(arrow: Any) -> Any:
    import polars as pl
    import pyarrow as pa

    return pl.from_arrow(pa.array([], type=arrow)).dtype
