"""arrowdev UDFs as DuckDB functions: a Python function compiled by numba (or numba-cuda) and registered as a
vectorized (Arrow) function, where ``create_function``'s native UDFs run it once per row in the interpreter.

::

    import duckdb, arrowdev.duckdb
    con = duckdb.connect()
    arrowdev.duckdb.register(con, "f", lambda x: x * 2 + 1 if x > 0.5 else x - 1, ["DOUBLE"])
    con.sql("SELECT sum(f(x)) FROM t")

DuckDB hands the function one vector (2048 rows) at a time as PyArrow arrays, which arrowdev reads in place;
the result goes back as an Arrow array. The parameter types come from ``parameters`` (DuckDB type names or
types, Python types, or Arrow types) or else from the function's annotations (``x: float``); the return type
is what the UDF returns for those types (it is compiled at registration), unless ``return_type`` says.
docs/hosts.md is the guide.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .batches import HostUDF, engine

__all__ = ["register"]

_PYTHON_TYPES = {float: "DOUBLE", int: "BIGINT", str: "VARCHAR", bool: "BOOLEAN",
                 "float": "DOUBLE", "int": "BIGINT", "str": "VARCHAR", "bool": "BOOLEAN"}


def register(con: Any, name: str, f: Callable[..., Any], parameters: Sequence[Any] | None = None,
             return_type: Any = None, *, device: Any = None, null_aware: bool = False, out_type: Any = None,
             string_type: str = "string", side_effects: bool = False) -> Any:
    """Registers ``f`` as the DuckDB function ``name`` on connection ``con`` (returned, as DuckDB's own
    ``create_function`` returns it).

    ``parameters``: one type per argument, as DuckDB type names ("DOUBLE"), DuckDB types, Python types
    (float, int, str, bool) or Arrow types; None takes them from ``f``'s annotations. ``return_type`` (the
    same forms) or ``out_type`` (an Arrow type) fix the result type; otherwise it is what the UDF returns
    for the parameter types, found by compiling it now. A NULL argument gives NULL unless ``null_aware=True``
    (``f`` then sees ``ad.NA``). ``device="cuda"`` runs each vector on the GPU (a copy there and back per
    2048 rows: worth it for heavy UDFs only). ``side_effects`` is DuckDB's flag (False: DuckDB may fold calls).

    >>> import duckdb, arrowdev as ad, arrowdev.duckdb
    >>> con = duckdb.connect()
    >>> _ = ad.duckdb.register(con, "twice_plus_one", lambda x: x * 2 + 1, ["DOUBLE"])
    >>> con.sql("SELECT twice_plus_one(x) FROM (VALUES (1.5), (NULL)) v(x)").fetchall()
    [(4.0,), (None,)]
    """
    import pyarrow as pa

    engine("duckdb", "duckdb")

    names = _argument_names(f, parameters)
    duck_types = [_duckdb_type(con, t) for t in (parameters if parameters is not None else _annotations(f))]
    arrow_types = [_arrow_type(con, t) for t in duck_types]
    if return_type is not None and out_type is None:
        out_type = _arrow_type(con, _duckdb_type(con, return_type))
    udf = HostUDF(f, host="DuckDB", device=device, null_aware=null_aware, out_type=out_type,
                  string_type=string_type, noun="argument")
    shown = [str(t) for t in duck_types]
    result = udf.result_type(arrow_types, names, shown)  # compiles f for these types; errors name the arguments
    returns = _duckdb_type(con, return_type) if return_type is not None else _from_arrow(con, result)

    def vectorized(*arrays: Any) -> Any:
        run = udf.runner  # a vector like the last one, without nulls: straight to the kernel
        fast = run(arrays, True) if run is not None else None
        if fast is not None:
            return fast
        # one chunk per vector: the array itself is cheaper to read than the chunked array
        chunks = [a.chunk(0) if a.num_chunks == 1 else a for a in arrays]
        if not any(a.num_chunks != 1 for a in arrays):
            fast = udf.pyarrow_call(chunks)  # from the buffers, once the layout is prepared
            if fast is not None:
                return fast
        out = udf(chunks, names, shown)
        if not out.device.is_cpu_readable:
            out = out.to_host()
        return pa.array(out) if out.num_chunks == 1 else pa.chunked_array(out)

    vectorized.__name__ = vectorized.__qualname__ = name
    # DuckDB counts the function's parameters against the types
    vectorized.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(f"a{k}", inspect.Parameter.POSITIONAL_ONLY) for k in range(len(duck_types))])
    # null_handling="special": DuckDB hands NULLs over as they are and arrowdev propagates them (or, null-aware,
    # the UDF sees them); "default" would first copy each vector without its NULL rows
    con.create_function(name, vectorized, duck_types, returns, type="arrow", null_handling="special",
                        side_effects=side_effects)
    return con


def _argument_names(f: Callable[..., Any], parameters: Sequence[Any] | None) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(f).parameters.values()]
    except (TypeError, ValueError):
        names = []
    count = len(parameters) if parameters is not None else len(names)
    return names[:count] + [f"argument {k + 1}" for k in range(len(names), count)]


def _annotations(f: Callable[..., Any]) -> list[Any]:
    """The parameter types ``f`` is annotated with; TypeError naming the first that is not."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    missing = [p.name for p in params if p.annotation is p.empty]
    if not params or missing:
        raise TypeError(f"expected parameters=[...] (DuckDB types, one per argument) or annotations on the UDF's "
                        f"arguments (x: float), got none for {missing or 'its arguments'}")
    return [p.annotation for p in params]


def _duckdb_type(con: Any, t: Any) -> Any:
    """A DuckDB type from a DuckDB type or type name, a Python type or an Arrow type (or NumPy dtype)."""
    import duckdb
    import numpy as np

    types = getattr(duckdb, "sqltypes", None) or duckdb.typing  # DuckDB 1.4 renamed the module
    sqltype = getattr(duckdb, "sqltype", None) or duckdb.type
    if isinstance(t, types.DuckDBPyType):
        return t
    if isinstance(t, (type, str)) and t in _PYTHON_TYPES:
        return sqltype(_PYTHON_TYPES[t])
    if hasattr(t, "__arrow_c_schema__") or isinstance(t, np.dtype):
        return _from_arrow(con, t)
    if isinstance(t, type) and issubclass(t, np.generic):
        return _from_arrow(con, np.dtype(t))
    if isinstance(t, str):
        try:
            return sqltype(t)
        except Exception as e:  # DuckDB's parser errors
            raise TypeError(f"expected a DuckDB type name, got {t!r}: {e}") from None
    raise TypeError(f"expected a DuckDB type (or its name), a Python type or an Arrow type, got {t!r}")


def _arrow_type(con: Any, t: Any) -> Any:
    """The Arrow type DuckDB hands a vectorized function for DuckDB type ``t`` (asked of DuckDB itself)."""
    result = con.sql(f"SELECT NULL::{t} AS x")
    table = result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    return table.schema.field(0).type


def _from_arrow(con: Any, t: Any) -> Any:
    """The DuckDB type DuckDB makes of Arrow type ``t`` (or a NumPy dtype)."""
    import pyarrow as pa

    arrow = pa.from_numpy_dtype(t) if not hasattr(t, "__arrow_c_schema__") else pa.field(t).type
    return con.from_arrow(pa.table({"x": pa.array([], arrow)})).types[0]
