"""Parquet in and out of :class:`PartitionedTable`: partitions sized from the device's memory and Dask's cost of a
task (:mod:`arrowdev.integrations.dask.partitions`), one file per partition out."""

from __future__ import annotations

import glob
import os
from typing import Any

from ...column import ArrowColumn
from ...table import ArrowTable, table
from .collection import PartitionedTable, from_map
from .partitions import (
    DEFAULT_WORKING_SET,
    Piece,
    RowGroup,
    max_partition_bytes,
    partition_count,
    partition_sizes,
    plan,
    plan_balanced,
    target_partition_bytes,
    warn_if_overhead_bound,
)

__all__ = ["read_parquet", "to_parquet"]

_FALLBACK_GPU_MEMORY = 16 * 2**30  # where no GPU can be asked (no GPU here, no client): a small data-centre GPU
READ_THREADS = 8
"""Host threads that read a partition's files for libcudf (KvikIO's pool, one thread unless ``KVIKIO_NTHREADS``
says): 8 read one 25-million-row file 15% faster and four in one read 25% faster on the 4 x H200 machine
(docs/distributed.md, "The scale job on 1, 2 and 4 GPUs"). A ``KVIKIO_NTHREADS`` of the user's own wins."""


def _files(path: str | list[str]) -> list[str]:
    if isinstance(path, (list, tuple)):
        return [str(p) for p in path]
    path = str(path)
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "*.parquet")))
    found = sorted(glob.glob(path))
    if not found:
        raise FileNotFoundError(f"no Parquet files match {path!r}")
    return found


def row_groups(files: list[str], columns: list[str] | None) -> list[RowGroup]:
    """Every row group of ``files`` (footers only), with the uncompressed bytes of the columns read."""
    import pyarrow.parquet as pq

    groups = []
    for f in files:
        meta = pq.read_metadata(f)
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            nbytes = sum(rg.column(j).total_uncompressed_size for j in range(rg.num_columns)
                         if columns is None or rg.column(j).path_in_schema.split(".")[0] in columns)
            groups.append(RowGroup(f, i, rg.num_rows, nbytes))
    return groups


def _client() -> Any:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _gpu_memory(index: int) -> int:
    from ...gpu import runtime

    return int(runtime.cupy().cuda.runtime.getDeviceProperties(index)["totalGlobalMem"])


def _workers_memory(client: Any) -> tuple[int, list[int]]:
    """(number of workers, their memory limits) of the client's cluster."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # distributed before 2025.1 lists every worker anyway
        info = client.scheduler_info()
    workers = info.get("workers", {})
    return len(workers), [int(w["memory_limit"]) for w in workers.values() if w.get("memory_limit")]


def cluster_memory(on_gpu: bool, device: int | str | None = None) -> tuple[int, int]:
    """(bytes of memory a worker has for its partitions, workers): a GPU's memory (this process's GPU, else one
    asked of the cluster, else 16 GiB) or a CPU worker's memory limit; the workers of the current distributed
    client (one GPU, or a CPU's cores for Dask's local schedulers, without one)."""
    client = _client()
    workers, limits = _workers_memory(client) if client is not None else (0, [])
    if on_gpu:
        index = device if isinstance(device, int) else 0
        try:
            memory = _gpu_memory(index)
        except Exception:  # no GPU (or CuPy) in this process: the workers know
            try:
                memory = min(client.run(_gpu_memory, 0).values()) if client is not None else _FALLBACK_GPU_MEMORY
            except Exception:
                memory = _FALLBACK_GPU_MEMORY
        return memory, max(1, workers)
    if not workers:
        workers = os.cpu_count() or 1
    if not limits:
        limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // workers]
    return min(limits), workers


def _read_piece(piece: Piece, columns: list[str] | None) -> Any:
    import pyarrow.parquet as pq

    got = pq.ParquetFile(piece.path).read_row_group(piece.index, columns=columns)
    # a row range: Parquet has no row index in PyArrow, so the row group is read and sliced
    return got if (piece.start, piece.stop) == (0, got.num_rows) else got.slice(piece.start, piece.stop - piece.start)


def _engine(engine: str, on_gpu: bool, device: int | str | None) -> str:
    """The reader a partition is read with: "cudf" (libcudf decodes the Parquet pages on the worker's GPU,
    where pylibcudf is installed) or "pyarrow" (the CPU decodes, the table is then copied to the GPU)."""
    if engine not in ("auto", "cudf", "pyarrow"):
        raise ValueError(f"expected engine 'auto', 'cudf' or 'pyarrow', got {engine!r}")
    if engine == "pyarrow" or not on_gpu or (engine == "auto" and device != "cuda"):
        return "pyarrow"  # libcudf reads onto the worker's current GPU only
    try:
        import pylibcudf  # noqa: F401
    except ImportError:
        if engine == "cudf":
            raise ImportError("engine='cudf' needs pylibcudf: pip install 'arrowdev[cudf13]' (pylibcudf-cu13, "
                              "RAPIDS), or use engine='pyarrow'") from None
        return "pyarrow"
    return "cudf"


def libcudf_selection(pieces: tuple[Piece, ...], group_rows: list[int]) -> tuple[list[str], list[list[int]] | None,
                                                                              int, int | None]:
    """What one libcudf read of a partition asks for: the sources, each source's row groups, and the rows to skip
    and read (None: all). A partition is whole row groups in order (consecutive groups of a file one source) or a
    single row range of one group (``plan`` makes no other kind). ``group_rows``: the rows of each row group of
    the first piece's file. libcudf takes no row groups beside rows to skip, so a range is rows of its file."""
    if len(pieces) == 1:
        (p,) = pieces
        if not 0 <= p.index < len(group_rows) or p.stop > group_rows[p.index]:
            raise ValueError(f"expected {p.path} to have row group {p.index} of at least {p.stop:,} rows, as when "
                             f"read_parquet planned it; it has {len(group_rows)} row groups now: read it again")
        if p.start == 0 and p.stop == group_rows[p.index]:
            return [p.path], [[p.index]], 0, None
        return [p.path], None, sum(group_rows[:p.index]) + p.start, p.stop - p.start
    sources: list[str] = []
    groups: list[list[int]] = []
    for p in pieces:
        if p.start != 0:
            raise ValueError(f"expected whole row groups in a partition of {len(pieces)} pieces, got rows "
                             f"{p.start}:{p.stop} of {p.path} row group {p.index}")
        if sources and sources[-1] == p.path:
            groups[-1].append(p.index)
        else:
            sources.append(p.path)
            groups.append([p.index])
    return sources, groups, 0, None


def _reading_threads() -> None:
    """:data:`READ_THREADS` for KvikIO, unless the user chose: libkvikio reads ``KVIKIO_NTHREADS`` once, when it
    first reads, which in a worker that reads only through arrowdev is this module's first read (a process that
    read with cuDF before keeps what it had then: docs/distributed.md)."""
    if "KVIKIO_NTHREADS" not in os.environ and "KVIKIO_NUM_THREADS" not in os.environ:
        os.environ["KVIKIO_NTHREADS"] = str(READ_THREADS)


def _read_on_gpu(pieces: tuple[Piece, ...], columns: list[str] | None) -> ArrowTable:
    """The partition decoded on this worker's GPU by libcudf (pylibcudf) in one read, whatever its row groups
    and files (no concatenation: one chunk a column), its columns taken over zero-copy through
    ``__arrow_c_device_array__`` (RMM memory, kept alive by the columns)."""
    _reading_threads()
    import pyarrow.parquet as pq
    import pylibcudf as plc

    from ...column import column

    footer = pq.read_metadata(pieces[0].path)
    group_rows = [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
    sources, groups, skip, rows = libcudf_selection(pieces, group_rows)
    builder = plc.io.parquet.ParquetReaderOptions.builder(plc.io.types.SourceInfo(sources))
    if columns is not None:  # column_names since cuDF 26 (columns, deprecated, before)
        builder = builder.column_names(columns) if hasattr(builder, "column_names") else builder.columns(columns)
    options = builder.build()
    if groups is not None:
        options.set_row_groups(groups)
    if rows is not None:
        options.set_skip_rows(skip)
        options.set_num_rows(rows)
    got = plc.io.parquet.read_parquet(options)
    want = sum(p.stop - p.start for p in pieces)
    if got.tbl.num_rows() != want:
        raise RuntimeError(f"libcudf read {got.tbl.num_rows():,} rows of {pieces[0].path} where the footers "
                           f"promise {want:,}: expected the file unchanged since read_parquet planned it")
    # libcudf marks a column without nulls non-nullable; the file's schema says what PyArrow would give
    schema = footer.schema.to_arrow_schema()
    names = got.column_names(include_children=False)
    return table({name: _as_in(schema, name, column(col)) for name, col in zip(names, got.columns)})


def _as_in(schema: Any, name: str, col: ArrowColumn) -> ArrowColumn:
    index = schema.get_field_index(name)
    return col if index < 0 else col.with_nullable(schema.field(index).nullable)


def _pyarrow_threads() -> None:
    """Lets PyArrow decode with several cores in a GPU worker: distributed starts workers with
    OMP_NUM_THREADS=1, which PyArrow takes as the size of its pool (a GPU worker runs one task at a time)."""
    import pyarrow as pa

    cores = os.cpu_count() or 1
    if pa.cpu_count() == 1 and cores > 1:
        pa.set_cpu_count(min(8, cores))


def _read_partition(pieces: tuple[Piece, ...], columns: list[str] | None, device: int | str | None,
                    engine: str = "pyarrow") -> ArrowTable:
    import pyarrow as pa

    if engine == "cudf":
        try:
            return _read_on_gpu(pieces, columns)
        except MemoryError as e:
            raise _does_not_fit(None, _current_gpu(), pieces, e) from e
    if device is not None and device != "cpu":
        _pyarrow_threads()
    parts = [_read_piece(p, columns) for p in pieces]
    got = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    if len(parts) > 1:
        try:  # merged row groups: one chunk a column (one host copy) instead of a chunk per row group
            got = got.combine_chunks()
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # strings past 2 GiB: keep the chunks
            pass
    tbl = table(got)
    if device is None or device == "cpu":
        return tbl
    device = _current_gpu() if device == "cuda" else device  # dask-cuda gives each worker its own GPU
    try:
        return tbl.to_device(device)
    except MemoryError as e:
        raise _does_not_fit(tbl, device, pieces, e) from e


def _current_gpu() -> int:
    from ...gpu import runtime

    return int(runtime.cupy().cuda.runtime.getDevice())


def _does_not_fit(tbl: ArrowTable | None, device: int, pieces: tuple[Piece, ...], e: MemoryError) -> MemoryError:
    """The error of a partition that does not fit on its GPU: its size and where it comes from, the GPU's free
    memory, and the fix."""
    free, total = _free_and_total(device)
    rows = sum(p.stop - p.start for p in pieces)
    size = f" of {tbl.nbytes:,} bytes" if tbl is not None else ""
    return MemoryError(
        f"a partition{size} ({rows:,} rows from {pieces[0].path} row group {pieces[0].index}"
        f"{f' and {len(pieces) - 1} more' if len(pieces) > 1 else ''}) does not fit on GPU {device}: {free:,} of "
        f"its {total:,} bytes free. Expected partitions well under the free memory: pass read_parquet a smaller "
        f"partition_bytes or rows_per_partition (or leave both out), or give the worker more room (dask-cuda's "
        f"device_memory_limit spills other partitions) ({e})")


def _free_and_total(device: int) -> tuple[int, int]:
    try:
        from ...gpu import runtime

        cp = runtime.cupy()
        with cp.cuda.Device(device):
            free, total = cp.cuda.runtime.memGetInfo()
        return int(free), int(total)
    except Exception:  # only for the message
        return -1, -1


def read_parquet(path: str | list[str], columns: list[str] | None = None, device: int | str | None = None, *,
                 partition_bytes: int | None = None, rows_per_partition: int | None = None,
                 working_set: float = DEFAULT_WORKING_SET, engine: str = "auto") -> PartitionedTable:
    """A :class:`PartitionedTable` over the Parquet files at ``path`` (a file, a glob pattern, a directory of
    ``*.parquet`` files, or a list of files). ``device``: ``None`` / ``"cpu"`` keeps partitions in CPU memory,
    ``"cuda"`` puts each on its worker's current GPU, an int on that GPU.

    Partition sizes (docs/distributed.md, "Partition sizes"; :mod:`arrowdev.integrations.dask.partitions`): by default
    arrowdev picks a target from the worker's memory (a GPU's, or a CPU worker's limit, over 4 partitions in
    flight times ``working_set``, the job's bytes per input byte), as many partitions on every worker (one a GPU
    worker, two a CPU worker, where the data allows), and never under what a task needs to outweigh Dask's cost
    (1 GB on a GPU, 50 MB on a CPU); row groups go to equal slices, larger ones cut into row ranges.
    ``partition_bytes`` (bytes of the columns read, uncompressed) or ``rows_per_partition`` sets the target
    instead (row groups merged up to it); a choice that makes tasks overhead-bound gives a
    :class:`~arrowdev.dask.PartitionSizeWarning`. The footers are read here.

    ``engine``: who decodes the Parquet pages. ``"auto"`` (default): libcudf on the worker's GPU for
    ``device="cuda"`` where pylibcudf is installed (as dask-cudf does), else PyArrow; ``"cudf"``: libcudf, one
    read a partition whatever its row groups and files, its columns taken over zero-copy (RMM memory), an
    ImportError naming the package where pylibcudf is missing; ``"pyarrow"``: PyArrow on the worker's CPU (up
    to 8 cores), then a copy to the GPU. Decoding is most of the work of a job that reads and transforms
    (docs/distributed.md has the measures).
    """
    if device not in (None, "cpu", "cuda") and not isinstance(device, int):
        raise ValueError(f"expected device None, 'cpu', 'cuda' or a GPU index, got {device!r}")
    if partition_bytes is not None and rows_per_partition is not None:
        raise ValueError("expected at most one of partition_bytes and rows_per_partition, got both")
    columns = None if columns is None else list(columns)
    groups = row_groups(_files(path), columns)
    on_gpu = device not in (None, "cpu")
    memory, workers = cluster_memory(on_gpu, device)
    total = sum(g.nbytes for g in groups)
    auto = target_partition_bytes(total, memory, workers, on_gpu, working_set)
    if rows_per_partition is not None:
        partitions = plan(groups, target_rows=rows_per_partition)
    elif partition_bytes is not None:
        partitions = plan(groups, target_bytes=partition_bytes)
    else:  # as many partitions on every worker, as equal as the row groups allow
        partitions = plan_balanced(groups, partition_count(total, auto, workers, on_gpu),
                                   max_partition_bytes(memory, working_set))
    if partition_bytes is not None or rows_per_partition is not None:
        warn_if_overhead_bound(partition_sizes(partitions, groups), on_gpu, auto)
    n = len(partitions)
    reader = _engine(engine, on_gpu, device)
    if reader == "cudf" and device not in ("cuda", None):
        raise ValueError(f"engine 'cudf' reads onto each worker's current GPU: expected device='cuda', got {device!r}")
    return from_map(_read_partition, partitions, [columns] * n, [device] * n, [reader] * n)


def to_parquet(parts: PartitionedTable, path: str, *, compute: bool = True, **options: Any) -> Any:
    """Writes ``{path}/part.{i}.parquet`` per partition; the paths (a delayed list with ``compute=False``).
    The same as :meth:`PartitionedTable.to_parquet`."""
    return parts.to_parquet(path, compute=compute, **options)
