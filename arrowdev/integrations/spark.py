"""arrowdev UDFs in Spark through ``DataFrame.mapInArrow`` (PySpark >= 4.0; tested with 4.3).

Spark hands each Python worker an iterator of ``pyarrow.RecordBatch``; :func:`arrow_udf` makes the
function that runs an arrowdev UDF on each batch (zero-copy from Spark's Arrow batches into arrowdev;
numba on the CPU, or a CUDA kernel with ``device="cuda"`` on executors with a GPU), and
:func:`with_column` declares the output schema::

    out = arrowdev.spark.with_column(df, f, columns=["a", "b"], out="y", out_type="bigint")

Spark's Python workers run ``$PYSPARK_PYTHON`` as it was when the SparkSession started (spark-submit sets it
from ``--conf spark.pyspark.python=...``), else the ``python3`` on the PATH: not necessarily the interpreter
that has arrowdev. Two checks say so, naming the interpreter and the fix:

- in each worker: the function :func:`arrow_udf` makes travels by value, without arrowdev inside (the UDF comes
  as bytes), so a worker that cannot import arrowdev (or has another version) runs it and says so, instead of
  failing in the unpickling of Spark's command;
- on the driver, in local mode (the workers run on this machine): :func:`with_column` first starts the
  workers' interpreter once, as Spark will, and checks that it imports arrowdev; this also covers an
  interpreter without PyArrow, where PySpark's own worker code fails before any UDF runs.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from .._version import __version__
from ..core.types import DataType
from .batches import AppendUDF, check_new_column, column_names

__all__ = ["arrow_udf", "with_column"]


def arrow_udf(f: Callable[..., Any], columns: str | Iterable[str], out: str, *, device: str = "cpu",
              result_type: pa.DataType | None = None,
              **apply_options: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function for ``df.mapInArrow``: each record batch with the new column ``out`` appended,
    ``f(a, b, ...)`` row by row over ``columns`` (see :class:`arrowdev.integrations.batches.AppendUDF`;
    ``apply_options``: ``null_aware``, ``out_type``, ``string_type``, as :meth:`arrowdev.ArrowTable.apply`).
    ``result_type``: the Arrow type the ``mapInArrow`` schema declares for ``out``; the result is cast to it
    safely, or refused with an error naming the column and both types.

    The function checks, in each worker, that the worker's Python has arrowdev (the same version as here)."""
    per_batch = AppendUDF(f, columns, out, device=device, result_type=result_type, **apply_options)
    return _by_value(_dumps(per_batch), __version__, _FIX)


def with_column(df: Any, f: Callable[..., Any], columns: str | Iterable[str], out: str, out_type: Any, *,
                device: str = "cpu", udf_out_type: Any = None, **apply_options: Any) -> Any:
    """``df`` with the new column ``out``, ``f(a, b, ...)`` row by row over ``columns``, in ``mapInArrow``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Must not have a column ``out`` already (``ValueError``: Spark's ``withColumn`` would replace it, a
        second one would break the schema; drop it first).
    f : callable
        The UDF, as for :meth:`arrowdev.ArrowTable.apply`.
    columns : str or list of str
        Its arguments' columns; one string is one column.
    out : str
        The new column's name.
    out_type : str, pyspark.sql.types.DataType, or a PyArrow / arrowdev type
        The new column's Spark type: a Spark SQL type name or DDL string (``"bigint"``, ``"long"``,
        ``"int"``, ``"double"``, ``"string"``, ``"decimal(21,2)"``, ``"array<int>"``), or an Arrow type
        mapped as Spark maps Arrow types. The UDF's result is cast to it on the Python side with PyArrow's
        safe cast (an int64 result into a ``"double"`` column), or the task fails with an error naming the
        column and both types.
    device : {"cpu", "cuda"}
        ``"cuda"`` runs the UDF on the executor's GPU.
    udf_out_type : optional
        arrowdev's own ``out_type`` (:meth:`arrowdev.ArrowTable.apply`): the type the UDF computes.
    **apply_options
        The other options of :meth:`arrowdev.ArrowTable.apply`: ``null_aware``, ``string_type``.

    Returns
    -------
    pyspark.sql.DataFrame

    Raises
    ------
    ImportError
        In local mode, when the workers' interpreter (``$PYSPARK_PYTHON`` as the session started, else
        ``python3``) cannot import arrowdev: checked once, before any job, naming it and the fix.
    """
    check_new_column(out, df.columns, "the DataFrame")
    _check_local_workers(df.sparkSession)
    from pyspark.sql.pandas.types import to_arrow_type

    spark_type = _spark_type(out_type)
    if udf_out_type is not None:
        apply_options["out_type"] = udf_out_type
    function = arrow_udf(f, column_names(columns), out, device=device,
                         result_type=to_arrow_type(spark_type, timezone="UTC"), **apply_options)
    schema = copy.deepcopy(df.schema).add(out, spark_type)  # StructType.add changes the schema in place
    return df.mapInArrow(function, schema)


_FIX = (f"Spark's workers run $PYSPARK_PYTHON as it was when the SparkSession started, else the python3 on "
        f"the PATH: set PYSPARK_PYTHON={sys.executable} (the driver's interpreter) before the session starts "
        f"(spark-submit: --conf spark.pyspark.python=...), or to a Python that has arrowdev {__version__} "
        f"installed on every executor")
_PROBE = "import sys; print(sys.executable); print(sys.version.split()[0]); import arrowdev; print(arrowdev.__version__)"
_CHECKED: dict[tuple[str, str], str] = {}  # (workers' interpreter, its environment) -> the problem, or ""


def _check_local_workers(session: Any) -> None:
    """In local mode, start the workers' interpreter once (per interpreter and environment) as Spark will, and
    refuse to go on if it cannot import arrowdev. Elsewhere the executors' interpreters are not this
    machine's to start: the check in each worker (:func:`_by_value`) says it there."""
    if ".connect." in type(session).__module__:  # Spark Connect: the workers are the server's
        return
    context = session.sparkContext
    if not context.master.startswith("local"):
        return
    python, executor_env = context.pythonExec, dict(context.environment)
    env = {**os.environ, **executor_env}
    key = (python, repr(sorted(env.items())))
    if key not in _CHECKED:
        _CHECKED[key] = _local_worker_problem(python, env)
    if _CHECKED[key]:
        raise ImportError(_CHECKED[key])


def _local_worker_problem(python: str, env: dict[str, str]) -> str:
    """What keeps ``python`` (started in ``env``) from running arrowdev UDFs, or ""."""
    where = f"Spark's Python workers will run {python!r}"
    try:
        probe = subprocess.run([python, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return ""  # slow to start, not known to be wrong: the check in each worker stays
    except OSError as e:
        return f"{where}, which cannot be started ({e}). {_FIX}"
    lines = probe.stdout.splitlines()
    if len(lines) >= 2:
        where += f" ({lines[0]}, Python {lines[1]})"
    if probe.returncode != 0:
        error = (probe.stderr.strip().splitlines() or ["no error printed"])[-1]
        return f"{where}, which cannot import arrowdev ({error}). {_FIX}"
    if len(lines) >= 3 and lines[2] != __version__:
        return f"{where}, which has arrowdev {lines[2]}; this driver has arrowdev {__version__}. {_FIX}"
    return ""


def _spark_type(out_type: Any) -> Any:
    """``out_type`` as a ``pyspark.sql.types.DataType`` (a string is parsed by Spark, on the driver)."""
    from pyspark.errors import PySparkException
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import DataType as SparkType

    expected = ("a Spark SQL type name or DDL string ('bigint', 'long', 'double', 'string', "
                "'decimal(10,2)', 'array<int>'), a pyspark.sql.types.DataType, or a PyArrow / arrowdev type")
    if isinstance(out_type, SparkType):
        return out_type
    if isinstance(out_type, str):
        try:
            return SparkType.fromDDL(out_type)
        except PySparkException as e:
            raise ValueError(f"expected out_type as {expected}; Spark cannot parse {out_type!r}: "
                             f"{str(e).splitlines()[0]}") from e
    if hasattr(out_type, "__arrow_c_schema__"):
        arrow = out_type if isinstance(out_type, pa.DataType) else DataType.from_arrow(out_type).to_pyarrow()
        try:
            return from_arrow_type(arrow)
        except (PySparkException, TypeError) as e:
            raise TypeError(f"out_type {arrow} has no Spark type: {str(e).splitlines()[0]}") from e
    raise TypeError(f"expected out_type as {expected}, got {out_type!r}")


def _dumps(obj: Any) -> bytes:
    """``obj`` pickled as Spark pickles its commands (cloudpickle: the UDF may be a lambda or a local
    function)."""
    try:
        from pyspark import cloudpickle
    except ImportError:  # without PySpark (tests of the batch function): the same library, as distributed ships it
        import cloudpickle
    return cloudpickle.dumps(obj)


def _by_value(payload: bytes, version: str, fix: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function handed to ``mapInArrow``. Being local, cloudpickle sends it by value: its code, the
    payload (the pickled :class:`AppendUDF`) and two strings. Unpickling it imports nothing of arrowdev,
    so the worker gets to run it and say what is missing; it may use no name of this module."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pickle
        import sys

        where = f"Spark's Python worker runs {sys.executable} (Python {sys.version.split()[0]})"
        try:
            from arrowdev import _version  # runs arrowdev/__init__.py: all of arrowdev and its dependencies
        except ImportError as e:
            raise ImportError(f"{where}, which cannot import arrowdev ({type(e).__name__}: {e}). {fix}") from e
        if _version.__version__ != version:
            raise ImportError(f"{where}, which has arrowdev {_version.__version__} (from {_version.__file__}); "
                              f"the UDF was made with arrowdev {version}. {fix}")
        return map(pickle.loads(payload), batches)

    return run
