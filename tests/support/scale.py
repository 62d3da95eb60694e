"""examples/scale_job.py for the tests (and for their workers, which do not have examples/ on their path), and the
job's statistics computed by PyArrow alone, a reference independent of arrowdev."""

from __future__ import annotations

import importlib
import math
import pathlib
import sys
from typing import Any

from distributed import WorkerPlugin

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


class ImportExamples(WorkerPlugin):
    """A worker plugin putting examples/ on the workers' path, now and in workers started later (a nanny's new
    worker). Not ``Client.upload_file``: a module imported from a worker's scratch folder has another file name in
    every cluster, and arrowdev's UDF cache keys on it (every worker would compile the job's UDFs again)."""

    name = "arrowdev-tests-examples-path"

    def setup(self, worker: Any) -> None:
        if str(EXAMPLES) not in sys.path:
            sys.path.insert(0, str(EXAMPLES))


def scale_job(*clients: Any) -> Any:
    """The module; the workers of ``clients`` import it too (graphs carry its functions by reference)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    for client in clients:
        client.register_plugin(ImportExamples())
    return importlib.import_module("scale_job")


def pyarrow_stats(files: list[str]) -> dict[str, Any]:
    """The job's statistics by PyArrow compute over the files read whole."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(files)
    x = t["x"]
    y = pc.if_else(pc.greater(x, 0.5), pc.add(pc.multiply(x, 2.0), 1.0), pc.subtract(x, 1.0))
    shout = pc.binary_join_element_wise(pc.utf8_upper(t["s"]), "!", "")
    hit = pc.and_(pc.starts_with(shout, "A"), pc.equal(t["cat"], "c07"))
    return {"rows": t.num_rows, "sum_y": math.fsum(y.to_pylist()), "positives": pc.sum(pc.greater(x, 0.5)).as_py(),
            "chars": pc.sum(pc.utf8_length(shout)).as_py(), "hits": pc.sum(hit).as_py(),
            "sum_y_hits": math.fsum(pc.filter(y, hit).to_pylist())}


def close(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Counts equal, sums to 1e-9 (relative; another order of additions)."""
    return got.keys() == want.keys() and all(
        math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-9) if k.startswith("sum") else got[k] == want[k]
        for k in got)
