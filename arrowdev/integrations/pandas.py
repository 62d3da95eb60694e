"""arrowdev UDFs over pandas data: a Python function compiled by numba (or numba-cuda) and run over a whole
Series or the columns of a DataFrame, where ``Series.map`` / ``DataFrame.apply(axis=1)`` call it once per row.

::

    import arrowdev.pandas
    y = arrowdev.pandas.apply(df["x"], lambda x: x * 2 + 1 if x > 0.5 else x - 1)    # a Series
    z = arrowdev.pandas.apply(df, lambda a, b: a * b, columns=["a", "b"])            # a Series, row-wise

The data comes in zero-copy where it can: Arrow-backed columns (``pd.ArrowDtype``, pandas' ``str``) as they
are, NumPy numbers and datetimes over the same buffer; NumPy bools are packed into bits and object columns
converted (copies). The result is a Series on the same index, of the same kind as the input: Arrow-backed for
Arrow-backed input, pandas' nullable dtypes (``Int64``, ``boolean``, ...) for nullable input, NumPy otherwise
(as ``pyarrow.Array.to_pandas`` makes it: integers with nulls become floats with NaN). docs/hosts.md is the guide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..column import ArrowColumn
from .batches import HostUDF, engine

__all__ = ["apply"]


def apply(data: Any, f: Callable[..., Any], columns: Sequence[Any] | None = None, *, device: Any = None,
          null_aware: bool = False, out_type: Any = None, string_type: str = "string",
          name: Any = None) -> Any:
    """``f`` row by row over a Series (``f(x)``) or the ``columns`` of a DataFrame (``f(a, b, ...)``; all
    columns in order by default): a Series on ``data``'s index, named ``name`` (a Series' own name by
    default).

    Missing values (``None``, ``pd.NA``, ``NaT``, nulls of Arrow-backed data) give missing results unless
    ``null_aware=True`` (``f`` then sees ``ad.NA``); NaN in a NumPy float column is a value, as
    ``Series.map`` passes it. ``out_type`` (an Arrow type) fixes the result type; ``device="cuda"`` runs it
    on the GPU (a copy there and back).

    >>> import pandas as pd, arrowdev as ad, arrowdev.pandas
    >>> ad.pandas.apply(pd.Series([1.0, 2.0, 3.0], index=[7, 8, 9]), lambda x: x * 2 + 1).tolist()
    [3.0, 5.0, 7.0]
    >>> df = pd.DataFrame({"a": [1, -2, 3], "b": [10, 20, None]}, dtype="Int64")
    >>> ad.pandas.apply(df, lambda a, b: a * b if a > 0 else b, columns=["a", "b"]).tolist()
    [10, 20, <NA>]
    """
    pd = engine("pandas", "pandas")

    if isinstance(data, pd.Series):
        series, index = [data], data.index
        name = data.name if name is None else name
    elif isinstance(data, pd.DataFrame):
        chosen = list(data.columns) if columns is None else list(columns)
        missing = [c for c in chosen if c not in data.columns]
        if missing or not chosen:
            raise KeyError(f"expected columns of the DataFrame, got {missing or 'none'} "
                           f"(it has {list(data.columns)})")
        series, index = [data[c] for c in chosen], data.index
    else:
        raise TypeError(f"expected a pandas Series or DataFrame, got {type(data).__name__}")
    if any(isinstance(s, pd.DataFrame) for s in series):
        raise ValueError("expected unique column names: a name the DataFrame repeats selects several columns")
    udf = HostUDF.shared(f, host="pandas", device=device, null_aware=null_aware, out_type=out_type, string_type=string_type)
    names = [str(s.name) if s.name is not None else "<unnamed>" for s in series]
    result = udf([_to_arrow(s) for s in series], names, [str(s.dtype) for s in series])
    if not result.device.is_cpu_readable:
        result = result.to_host()
    return _to_pandas(result, _kind(series), index, name)


def _to_arrow(series: Any) -> Any:
    """An Arrow array over a Series' values: zero-copy for Arrow-backed data and NumPy numbers."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    array = series.array
    if isinstance(series.dtype, pd.ArrowDtype) or isinstance(series.dtype, pd.StringDtype) and \
            series.dtype.storage == "pyarrow":
        return array.__arrow_array__()  # the ChunkedArray pandas holds
    if isinstance(series.dtype, np.dtype):
        values = series.to_numpy(copy=False)
        if values.dtype.kind in "iuf":
            return pa.array(values)  # over the same buffer (NaN stays a value, as Series.map passes it)
        if values.dtype.kind in "bmM" or values.dtype.kind == "O" and not len(values):
            return pa.array(values, from_pandas=True)  # bools as bits, NaT as null
        try:
            return pa.array(values, from_pandas=True)  # object: strings (None, NaN, pd.NA as null)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise TypeError(f"pandas passes column {str(series.name)!r} of type object whose values Arrow "
                            f"cannot type ({e}); expected strings or numbers") from None
    try:  # pandas' extension arrays: nullable numbers and bools, Python strings, categoricals, ...
        return pa.array(array)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise TypeError(f"pandas passes column {str(series.name)!r} of type {series.dtype}, which Arrow cannot "
                        f"take ({e})") from None


def _kind(series: list[Any]) -> str:
    """How the result is backed: 'arrow' where an input is Arrow-backed (``pd.ArrowDtype``), 'nullable' where
    one has a pandas nullable dtype, else 'numpy'."""
    import numpy as np
    import pandas as pd

    if any(isinstance(s.dtype, pd.ArrowDtype) for s in series):
        return "arrow"
    if any(not isinstance(s.dtype, np.dtype) and s.dtype != "str" and hasattr(s.dtype, "na_value")
           and s.dtype.na_value is pd.NA for s in series):
        return "nullable"
    return "numpy"


def _to_pandas(result: ArrowColumn, kind: str, index: Any, name: Any) -> Any:
    import pandas as pd
    import pyarrow as pa

    values = pa.chunked_array(result)
    if kind == "arrow":
        return pd.Series(pd.arrays.ArrowExtensionArray(values), index=index, name=name, copy=False)
    mapper = _nullable_dtype if kind == "nullable" else None
    out = values.to_pandas(types_mapper=mapper)
    out.index, out.name = index, name
    return out


def _nullable_dtype(arrow_type: Any) -> Any:
    """pandas' nullable dtype for an Arrow type (None: pandas' default)."""
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type):
        return pd.api.types.pandas_dtype(str(pd.ArrowDtype(arrow_type).numpy_dtype).capitalize()
                                         .replace("Bool", "boolean").replace("Uint", "UInt"))
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return pd.StringDtype()
    return None
