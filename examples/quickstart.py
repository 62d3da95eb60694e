"""arrowdev in one page: take Arrow data from anywhere, hand it on anywhere, zero-copy.

Runs without a GPU. With one (and arrowdev[cuda13] installed), see examples in docs/.
"""

import pyarrow as pa

import arrowdev as ad


def main() -> None:
    # Any Arrow producer works: PyArrow here; Polars, nanoarrow and capsules the same way.
    source = pa.chunked_array([["apple", "kiwi"], [None, "fig"]])
    col = ad.column(source)
    print(col)
    print("type:", col.type, "| chunks:", col.num_chunks, "| nulls:", col.null_count, "| device:", col.device)

    # Zero-copy: the buffers arrowdev hands on are the producer's own.
    first = pa.array(col.chunks[0])
    assert first.buffers()[2].address == source.chunk(0).buffers()[2].address
    print("zero-copy slice:", col[1:3].to_pylist())

    # Tables: named columns; operations never copy column data.
    tbl = ad.table({"fruit": col, "n": pa.array([5, 4, None, 3])})
    tbl = tbl.append_column("n2", tbl["n"]).rename_columns({"n": "count"})
    print(tbl)
    print(pa.table(tbl).to_pydict())

    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        print(pl.DataFrame(tbl))

    del col, tbl, first
    stats = ad.debug.ownership_stats()
    print("held arrays left:", stats["live_containers"], "| exports not yet released:", stats["live_exported_nodes"])


if __name__ == "__main__":
    main()
