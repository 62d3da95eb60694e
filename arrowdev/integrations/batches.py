"""What the engine hosts share: a UDF as an engine calls it on its batches.

- :class:`HostUDF`: ``f`` row by row over a host's arrays (Polars Series, DuckDB's and Ray's PyArrow arrays,
  pandas' buffers), each checked first that a UDF can take its type (errors name the host's column and its
  type), run where the data is or on a GPU, and the result type found without running: compiled for empty
  columns of the host's types (the kernel the first batch then runs). Polars (:mod:`.polars`), DuckDB
  (:mod:`.duckdb`) and pandas (:mod:`.pandas`) build on it.
- :class:`AppendUDF`: a UDF over a PyArrow batch, appended to it as a new column: Ray Data (:mod:`.ray`) and
  Spark (:mod:`.spark`) hand a function PyArrow batches; each wraps this one.

The rules both follow (docs/distributed.md, "Ray and Spark"):

- ``columns`` is a list of column names; a single string is one column (``"ab"`` is the column ``ab``, not
  ``a`` and ``b``).
- ``out`` is a new column: a batch that already has a column of that name is refused (``ValueError``), never
  given a second one (a duplicate name breaks Spark's schema and Ray's rows) nor replaced silently.
- ``result_type``, where the host declares the output's type (Spark's schema), is what the batch gets: the
  UDF's result is cast to it with PyArrow's safe cast, or refused with an error naming the column and both
  types.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from ..column import ArrowColumn, column
from ..core.types import DataType
from ..errors import MissingDependencyError, install_hint
from ..table import ArrowTable, table
from ..udf import UDFCompileError
from ..udf.compile.arrow_types import UnsupportedTypeError, input_kind
from ..udf.run import prepared_host
from ..udf.run.apply import apply_columns
from ..udf.run.callables import as_udf
from ..udf.spec import UDF, function_key

__all__ = ["AppendUDF", "HostUDF", "cast_result", "check_device", "check_new_column", "column_names", "engine", "kept_per_function"]


def engine(module: str, extra: str) -> Any:
    """The engine's module, imported; MissingDependencyError naming the extra to install where it does not
    import."""
    imported = sys.modules.get(module)  # an expression written inline asks each query (import_module: 5 us)
    if imported is not None:
        return imported
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(f"arrowdev.{extra} needs {module}, which does not import here ({e}): "
                                     f"{install_hint(extra)}") from e


def check_device(device: Any) -> Any:
    """``device`` as :meth:`arrowdev.ArrowColumn.apply` takes it (None: where the data is; "cpu", "cuda" or
    a GPU index); ValueError for anything else."""
    if device is None or device in ("cpu", "cuda") or isinstance(device, int) and not isinstance(device, bool) \
            and device >= 0:
        return device
    raise ValueError(f"expected device None, 'cpu', 'cuda' or a GPU index, got {device!r}")


class HostUDF:
    """``f(a, b, ...)`` row by row over the columns a host passes, as :meth:`arrowdev.ArrowTable.apply`
    computes it: nulls in, nulls out unless ``null_aware``; the output type numba infers unless ``out_type``
    says; new strings as ``string_type``. ``device``: None or "cpu" runs where the data is (host data: numba's
    CPU target); "cuda" (or a GPU index) copies host data to the GPU, runs the kernel there and leaves the
    result there (the host module copies it back where its engine needs host memory). ``host`` names the
    engine in errors, ``noun`` what it calls the UDF's inputs ("column", "argument")."""

    def __init__(self, f: Callable[..., Any], *, host: str, device: Any = None, null_aware: bool = False,
                 out_type: Any = None, string_type: str = "string", noun: str = "column") -> None:
        if not callable(f):
            raise TypeError(f"expected a function for the UDF, got {type(f).__name__}")
        self.f, self.host, self.noun, self.device = f, host, noun, check_device(device)
        if isinstance(out_type, str):  # "float32", "int64", ...: PyArrow's aliases
            out_type = pa.type_for_alias(out_type)
        self.options = {"null_aware": null_aware, "out_type": out_type, "string_type": string_type}
        self.arity = _arity(f)
        self._cpu = self.device in (None, "cpu")
        self._wanted = None if out_type is None else DataType.from_arrow(self.options["out_type"])
        self._types: dict[Any, DataType] = {}  # PyArrow input types seen -> DataType
        self._results: dict[tuple[DataType, ...], DataType] = {}  # input types -> result type (result_type)
        self._accepted: set[tuple[Any, ...]] = set()  # input types that passed :meth:`check` (Polars: every batch)
        self._as_udf: dict[int, Callable[..., Any]] = {}  # arity -> f as a Python function (udf/run/callables.py)
        self._last: tuple | None = None  # (layout probe, (prepared call, output PyArrow type)) of the last batch
        # ``run(arrays, chunked)`` (prepared_host.pyarrow_runner) of the last layout without nulls that has one: a
        # batch of it straight into the kernel, None for any other batch (DuckDB's function calls it first)
        self.runner: Callable[[Any, bool], Any] | None = None
        # ``run(arrays)`` (prepared_host.numpy_runner) of the last NumPy dtypes :meth:`numpy_call` was prepared for
        self.numpy_runner: Callable[[list[Any]], Any] | None = None

    @classmethod
    def shared(cls, f: Callable[..., Any], **options: Any) -> HostUDF:
        """The one :class:`HostUDF` of ``f`` with these options (made on first use, then kept while ``f`` lives):
        an engine expression built inline for every query (``df.select(ad.polars.udf(f, "x"))``, each call of
        ``ad.pandas.apply``) finds the prepared calls and result types of the last one instead of preparing
        them again (about 150 us a query in Polars at 10^4 rows). A new object where ``f`` cannot be weakly
        referenced or an option cannot be hashed."""
        return kept_per_function(_shared, f, options, lambda: cls(f, **options))

    def pyarrow_call(self, arrays: Sequence[Any]) -> Any:
        """``f`` over PyArrow arrays (one chunk each, in CPU memory) straight from their buffers, as a
        PyArrow array: the layout's prepared call (udf/run/prepared_host.py) without building arrowdev
        columns around the batch, for engines that call a UDF on many small batches (DuckDB: one per 2048
        rows). None where there is no prepared call for the layout yet (the first batch of a layout goes
        through :meth:`__call__`, which prepares it) or the layout has none (strings out, string_view in)."""
        run = self.runner  # read once: engines call from several threads (DuckDB), which replace it
        fast = run(arrays, False) if run is not None else None
        if fast is not None:
            return fast
        n = len(arrays[0])
        kinds, buffers, offsets, nulls = [], [], [], []
        for a in arrays:
            dtype = self._types.get(a.type)
            if dtype is None or len(a) != n or not n or not self._cpu:
                self._learn([b.type for b in arrays])
                return None
            held = a.buffers()
            if len(held) > 1 and held[1] is not None and not held[1].is_cpu:  # a GPU array: the general path
                return None
            count = a.null_count if held[0] is not None else 0
            kinds.append((dtype, count > 0))
            buffers.append(held)
            offsets.append(a.offset)
            nulls.append(count)
        # the closure's values are part of the UDF's identity: its key is read each call (spec.function_key)
        f = self._function(len(arrays))
        probe = (function_key(f), tuple(kinds), prepared_host.bitmaps_flag([o for o, c in zip(offsets, nulls) if c]))
        last = self._last  # read once: engines call from several threads (DuckDB), which replace it
        if last is not None and last[0] == probe:  # the layout of the last batch: no lookup
            call, out_type = last[1]
        else:
            call = prepared_host.lookup(UDF(f), probe[1], probe[2], self.options["null_aware"], self._wanted,
                                        self.options["string_type"])
            if call is None:
                return None
            out_type = call.arrow_type.to_pyarrow()
            self._last = (probe, (call, out_type))
            if not any(nulls):  # the next batches of this layout without nulls: straight to the kernel
                self.runner = prepared_host.pyarrow_runner(call, f, tuple(a.type for a in arrays), out_type)
        return call.pyarrow_array(buffers, offsets, nulls, n, out_type)

    def numpy_call(self, arrays: Sequence[Any]) -> Any:
        """``f`` over NumPy arrays of numbers without nulls (CPU), as a NumPy array: the layout's prepared call
        straight from the arrays (Polars hands numeric Series over that way, zero-copy). None where the layout
        has no prepared call yet (the first batch of it goes through :meth:`__call__`, which prepares it), or
        its output is not numbers."""
        run = self.numpy_runner  # read once: a host may call from several threads
        values = run(list(arrays)) if run is not None else None
        if values is not None or not self._cpu:
            return values
        dtypes = tuple(a.dtype for a in arrays)
        try:
            kinds = tuple((DataType.from_arrow(pa.from_numpy_dtype(t)), False) for t in dtypes)
        except (pa.ArrowNotImplementedError, TypeError):
            return None
        f = self._function(len(arrays))
        call = prepared_host.lookup(UDF(f), kinds, prepared_host.bitmaps_flag([]), self.options["null_aware"],
                                    self._wanted, self.options["string_type"])
        run = prepared_host.numpy_runner(call, f, dtypes) if call is not None else None
        if run is None:
            return None
        self.numpy_runner = run
        return run(list(arrays))

    def _function(self, arity: int) -> Callable[..., Any]:
        """``f`` as a Python function of ``arity`` arguments (udf/run/callables.py), made once per arity."""
        return self._as_udf.get(arity) or self._as_udf.setdefault(arity, as_udf(self.f, arity))

    def _learn(self, arrow_types: list[Any]) -> None:
        """Keeps the DataTypes of the input types :meth:`pyarrow_call` sees (not string_view's: PyArrow lists a
        view array's buffers otherwise than the C ABI does)."""
        for arrow_type in arrow_types:
            if arrow_type not in self._types and arrow_type != pa.string_view():
                self._types[arrow_type] = DataType.from_arrow(arrow_type)

    def __call__(self, arrays: Sequence[Any], names: Sequence[str], shown: Sequence[str] | None = None) -> ArrowColumn:
        """``f`` over ``arrays`` (any Arrow producers of equal length): a new column, on the GPU where
        ``device`` asked for one. ``names`` and ``shown`` (the host's names of the inputs and of their types)
        are for errors."""
        columns = [a if isinstance(a, ArrowColumn) else column(a) for a in arrays]
        if self._cpu and len(columns) == 1:  # the engines' common case, kept short (DuckDB: per 2048 rows)
            try:
                return columns[0].apply(self.f, **self.options)
            except TypeError as e:
                raise self._explained(e, columns, names, shown) from e
        return self._run(columns, names, shown)

    def _run(self, columns: list[ArrowColumn], names: Sequence[str], shown: Sequence[str] | None) -> ArrowColumn:
        self.check([c.type for c in columns], names, shown)
        device = None if self.device == "cpu" else self.device
        try:
            if len(columns) == 1:
                return columns[0].apply(self.f, device=device, **self.options)
            if device is None:  # where the data is: the columns straight to the UDF's runner, no table around them
                if len({len(c) for c in columns}) > 1:
                    raise ValueError(f"expected {self.noun}s of one length from {self.host}, got "
                                     f"{', '.join(f'{n!r}: {len(c)} rows' for n, c in zip(names, columns))}")
                options = self.options
                return ArrowColumn(*apply_columns(self.f, columns, options["null_aware"], options["out_type"],
                                                  string_type=options["string_type"]))
            args = table({f"a{k}": c for k, c in enumerate(columns)})  # host names may repeat
            return args.apply(self.f, device=device, **self.options)
        except TypeError as e:
            raise self._explained(e, columns, names, shown) from e

    def check(self, types: Sequence[Any], names: Sequence[str], shown: Sequence[str] | None = None) -> None:
        """TypeError, naming the input and its type, for a type no UDF can take or an input count that is
        not ``f``'s number of arguments."""
        key = tuple(types)
        if key in self._accepted:
            return
        if self.arity is not None and self.arity != len(types):
            raise TypeError(f"{_name(self.f)} takes {self.arity} argument(s), but {self.host} passes "
                            f"{len(types)} {self.noun}(s): {', '.join(map(repr, names))}; pass one {self.noun} "
                            "per argument of the UDF")
        for k, (name, dtype) in enumerate(zip(names, types)):
            dtype = DataType.from_arrow(dtype)
            try:
                input_kind(dtype)
            except UnsupportedTypeError:
                host_type = f"{shown[k]} (Arrow {dtype})" if shown else str(dtype)
                raise TypeError(f"{self.host} passes {self.noun} {name!r} of type {host_type}, which a UDF cannot "
                                "take: expected numbers, bools, dates, times, timestamps, durations or strings; "
                                f"cast the {self.noun} to one of them first") from None
        self._accepted.add(key)

    def result_type(self, types: Sequence[Any], names: Sequence[str], shown: Sequence[str] | None = None) -> DataType:
        """The type ``f`` returns over inputs of ``types`` (Arrow types), without running it on data: it is
        compiled for empty columns of those types, the kernel the first batch of such columns runs."""
        self.check(types, names, shown)
        key = tuple(DataType.from_arrow(t) for t in types)
        found = self._results.get(key)
        if found is None:  # kept: Polars asks again each time it plans a query with this UDF
            empty = [column(pa.array([], type=t.to_pyarrow())) for t in key]
            found = self._results[key] = self._run(empty, names, shown).type
        return found

    def _explained(self, error: TypeError, columns: list[ArrowColumn], names: Sequence[str],
                   shown: Sequence[str] | None) -> TypeError:
        """``error`` with the inputs the host passed and their types (UDF typing errors name the function,
        not the host's columns)."""
        self.check([c.type for c in columns], names, shown)  # a type no UDF takes: that error instead
        passed = ", ".join(f"{name!r}: {shown[k] if shown else c.type}"
                           for k, (name, c) in enumerate(zip(names, columns)))
        kind = UDFCompileError if isinstance(error, UDFCompileError) else TypeError
        return kind(f"{error} ({self.host} passed {passed})")


_shared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # f -> {options: HostUDF} (HostUDF.shared)
_kept_lock = threading.Lock()
T = TypeVar("T")


def kept_per_function(table: weakref.WeakKeyDictionary, f: Callable[..., Any], options: dict[str, Any],
                      make: Callable[[], T]) -> T:
    """The object ``table`` keeps for ``f`` and ``options`` (``make()`` on first use), kept while ``f`` lives; a new
    one, not kept, where ``f`` cannot be weakly referenced or an option cannot be hashed."""
    try:
        key = tuple(sorted(options.items()))
        with _kept_lock:
            found = table.setdefault(f, {}).get(key)
    except TypeError:  # f not weakly referenceable, or an unhashable option
        return make()
    if found is None:
        made = make()
        with _kept_lock:
            found = table[f].setdefault(key, made)
    return found


def _arity(f: Callable[..., Any]) -> int | None:
    """How many positional arguments ``f`` takes (None: any number, or not known)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def _name(f: Callable[..., Any]) -> str:
    return f"UDF {getattr(f, '__qualname__', None) or type(f).__name__!r}"


def column_names(columns: str | Iterable[str]) -> list[str]:
    """``columns`` as a list: one string is one column name."""
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, bytes) or not isinstance(columns, Iterable):
        raise TypeError(f"expected columns as a column name or a list of column names, got {columns!r}")
    names = list(columns)
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise TypeError(f"expected column names (str) in columns, got {bad[0]!r} in {names!r}")
    return names


def check_new_column(out: str, existing: Sequence[str], where: str = "the batch") -> None:
    """Refuse ``out`` if ``where`` (the batch, or a DataFrame) already has a column of that name."""
    if out in existing:
        raise ValueError(
            f"{where} already has a column {out!r} (columns: {list(existing)}); the UDF's result is "
            f"appended as a new column, and a second {out!r} would break Spark's schema and Ray's rows: "
            f"pass another out= name, or drop {out!r} first")


def cast_result(values: Any, result_type: pa.DataType, out: str) -> Any:
    """``values`` as ``result_type``: unchanged if they are of that type, else PyArrow's safe cast (no
    overflow, no truncation); an error naming column ``out`` and both types when it cannot be made."""
    if values.type == result_type:
        return values
    try:
        return values.cast(result_type, safe=True)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        error = TypeError if isinstance(e, pa.ArrowNotImplementedError) else ValueError
        raise error(
            f"the UDF's result for column {out!r} is {values.type}, but the column is declared "
            f"{result_type}, and PyArrow cannot cast it safely ({e}); make the UDF return "
            f"{result_type} values (arrowdev's apply option out_type: udf_out_type= in "
            f"arrowdev.spark.with_column), or declare the column's type as {values.type}") from e


class AppendUDF:
    """A function of a ``pyarrow.Table`` (or ``RecordBatch``) batch: the batch with the new column ``out``
    appended, ``f(a, b, ...)`` row by row over ``columns`` (a name or a list of names) as
    :meth:`arrowdev.ArrowTable.apply` computes it (``apply_options``: ``null_aware``, ``out_type``,
    ``string_type``). ``device="cuda"`` runs it on the task's GPU (give the task ``num_gpus``): the batch's
    columns are copied there and the result back. ``result_type`` (a ``pyarrow.DataType``): the type the
    host declared for ``out``; the result is cast to it (:func:`cast_result`)."""

    def __init__(self, f: Callable[..., Any], columns: str | Iterable[str], out: str, *, device: str = "cpu",
                 result_type: pa.DataType | None = None, **apply_options: Any) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"expected device 'cpu' or 'cuda', got {device!r}")
        if not isinstance(out, str):
            raise TypeError(f"expected out as the new column's name (str), got {out!r}")
        if result_type is not None and not isinstance(result_type, pa.DataType):
            raise TypeError(f"expected result_type as a pyarrow.DataType or None, got {result_type!r}")
        self.f, self.columns, self.out = f, column_names(columns), out
        self.device, self.result_type, self.apply_options = device, result_type, apply_options

    def values(self, batch: Any) -> Any:
        """The UDF's result over ``batch`` (an Arrow table or batch holding ``columns``), as a
        ``pyarrow.ChunkedArray`` of ``result_type`` where one is declared."""
        args: ArrowTable = table(batch).select(self.columns)
        if self.device == "cuda":
            args = args.to_device()
        values = args.apply(self.f, columns=self.columns, **self.apply_options).to_pyarrow()
        return values if self.result_type is None else cast_result(values, self.result_type, self.out)

    def __call__(self, batch: Any) -> Any:
        check_new_column(self.out, batch.schema.names)
        values = self.values(batch)
        if not hasattr(batch, "num_chunks"):  # a RecordBatch takes one array
            values = values.combine_chunks()
        return batch.append_column(self.out, values)
