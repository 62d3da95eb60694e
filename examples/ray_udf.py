"""Ray Data: an arrowdev UDF as a new column of every batch of a Dataset (CPU; numba compiles it).

    pip install -e ".[udf,ray]"           # Ray Data 2.60
    python examples/ray_udf.py

``batch_format="pyarrow"`` hands the UDF Arrow batches as they are (zero-copy into arrowdev); Ray's other
formats, a dict of NumPy arrays (its default) and pandas DataFrames, are taken too and come back in their own
format. The example checks its own results.
"""

from __future__ import annotations

import pyarrow as pa
import ray

import arrowdev.ray


def score(a, b):  # noqa: ANN001, ANN201 - a UDF: numba types it from the columns
    return a * 10 + b if a > 0 else b


def main() -> None:
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        table = pa.table({"a": pa.array([1, -2, None, 4]), "b": pa.array([5, 7, 1, None])})
        ds = ray.data.from_arrow(table)
        udf = arrowdev.ray.batch_udf(score, columns=["a", "b"], out="y")
        arrow = ds.map_batches(udf, batch_format="pyarrow").take_all()
        assert [r["y"] for r in arrow] == [15, 7, None, None], arrow
        pandas = ds.map_batches(udf, batch_format="pandas").take_all()  # nulls come back as pandas has them
        assert [r["y"] for r in pandas][:2] == [15, 7], pandas
        # one column is a name; out must be a new column
        doubled = ds.map_batches(arrowdev.ray.batch_udf(lambda a: a * 2, columns="a", out="a2")).take_all()
        assert [r["a2"] for r in doubled][:2] == [2, -4], doubled
    finally:
        ray.shutdown()
    print("ray_udf: ok")


if __name__ == "__main__":
    main()
