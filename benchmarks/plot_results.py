"""Draws the benchmarks' recorded results (benchmarks/results/*.json) as the figures in docs/images/.

    python3 benchmarks/plot_results.py [--results benchmarks/results] [--out docs/images]

- udf_bandwidth.png: numeric UDF bandwidth (bytes read + written per second) against rows, with the
  device-to-device copy of the same run as the ceiling, and the call replayed as a CUDA graph where the
  run has it (bench_udf.py --json);
- string_udfs.png: string UDF times against libcudf's kernels (where the run had cuDF), device malloc (the
  cuDF design) and PyArrow on the CPU (bench_string_udf.py --json);
- transfers.png: host <-> device transfers against the pinned-memory ceiling (bench_transfer.py --json);
- udf_memory.png: peak device memory of one UDF call over its output, arrowdev against libcudf's kernels
  (bench_udf_memory.py --json);
- scale_throughput.png: the scale job's rows per second against GPU count, arrowdev and dask-cudf, strong and
  weak scaling (bench_scale.py --json; drawn once benchmarks/results/bench_scale.json is there);
- hosts.png: UDFs in Polars, DuckDB and pandas: each host's row-by-row UDF, arrowdev (and arrowdev on the GPU
  where the run had one) and the host's native expression, at 10^6 rows (bench_hosts.py --json).

Each figure names the machine and where its numbers come from, and says at its foot (and in the PNG's
``Source`` text) the command that drew it, the results file, and the command that recorded those results.
Legends sit outside the axes, where they cannot cover a bar or a line. Needs matplotlib (the ``docs`` extra).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
METADATA = {"Software": None}  # no matplotlib version in the PNGs: regenerating them changes only what changed


def _caption(record: dict[str, Any]) -> str:
    """The machine, and whether the figures were measured (when) or transcribed from a document."""
    source = record["source"]
    if source == "measured":
        return f"{record['machine']}, measured {record.get('date') or ''}".strip()
    transcribed = re.search(r"transcribed from (\S+)", source)
    return f"{record['machine']}, transcribed from {transcribed[1]}" if transcribed else f"{record['machine']}, {source}"


# benchmark names that were internal (the first string UDF was the "seed" example) -> what a reader
# of the figure calls them; results recorded before the rename still carry the old names
LABELS = {"issue UDF": 'seed UDF: upper if len > 2 else s + s, then + "abc"'}


def _drawn_by(record: dict[str, Any], out: pathlib.Path) -> str:
    """The command that drew the figure, its results file, and the command that recorded them (without the
    machine's own output path)."""
    benchmark = record.get("benchmark") or next((n for n, (image, _) in PLOTS.items() if image == out.name), "?")
    command = re.sub(r"(--json)\s+\S+", r"\1", record.get("command") or f"benchmarks/{benchmark}.py --json")
    return (f"Drawn by: python3 benchmarks/plot_results.py, from benchmarks/results/{benchmark}.json\n"
            f"Recorded by: {command}")


def _save(fig: Any, out: pathlib.Path, record: dict[str, Any], bottom: float = 0.05) -> pathlib.Path:
    drawn_by = _drawn_by(record, out)
    fig.text(0.01, 0.005, drawn_by, fontsize=6.5, color="dimgrey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(out, dpi=110, metadata={**METADATA, "Source": drawn_by.replace("\n", "; ")})
    plt.close(fig)
    return out


def _legend_below(ax: Any, ncol: int) -> None:
    """The legend under the axes (outside them: it covers no bar or line)."""
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol, frameon=False)


def plot_udf(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    rows = record["rows"]
    sizes = sorted({r["rows"] for r in rows})
    ceiling = {r["rows"]: r["copy_gb_per_s"] for r in rows}
    ax.plot(sizes, [ceiling[s] for s in sizes], "k--", label="device copy (ceiling)")
    for udf, marker in (("x*2+1", "o"), ("in list", "s")):
        for dtype, style in (("float64", "-"), ("int64", ":")):
            points = sorted((r["rows"], r["gb_per_s"]) for r in rows if r["udf"] == udf and r["dtype"] == dtype)
            ax.plot(*zip(*points), style, marker=marker, label=f"arrowdev {udf} ({dtype})")
    cupy = sorted((r["rows"], r["gb_per_s"] * r["arrowdev_ms"] / r["cupy_ms"]) for r in rows
                  if r["udf"] == "x*2+1" and r["dtype"] == "float64")
    ax.plot(*zip(*cupy), "-", color="grey", marker="^", label="CuPy x*2+1 (float64)")
    replayed = sorted((r["rows"], r["replayed_gb_per_s"]) for r in rows
                      if r["udf"] == "x*2+1" and r["dtype"] == "float64" and r.get("replayed_gb_per_s"))
    if replayed:  # runs since ad.cuda.capture(): the same call replayed as a CUDA graph
        ax.plot(*zip(*replayed), "-", color="tab:purple", marker="D", label="arrowdev x*2+1, replayed graph (float64)")
    ax.set_xscale("log")
    ax.set_xlabel("rows")
    ax.set_ylabel("GB/s (read + written)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Numeric UDFs on the GPU\n{_caption(record)}", fontsize=9)
    _legend_below(ax, 2)
    return _save(fig, out, record)


def plot_strings(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    rows = record["rows"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    names = [LABELS.get(r["udf"], r["udf"]) for r in rows]
    y = range(len(rows))
    series = [("arrowdev (CUDA events)", "arrowdev_ms"), ("device malloc per string (cuDF design)", "device_malloc_ms"),
              ("PyArrow compute (CPU)", "pyarrow_ms")]
    if any(r.get("libcudf_wall_ms") for r in rows):  # same run, both timed by wall clock with a device sync
        series[1:1] = [("arrowdev (wall)", "arrowdev_wall_ms"), ("libcudf's kernels (wall)", "libcudf_wall_ms")]
    height = 0.8 / len(series)
    for i, (label, key) in enumerate(series):
        values = [r.get(key) or 0 for r in rows]
        ax.barh([v + (i - (len(series) - 1) / 2) * height for v in y], values, height=height, label=label)
    ax.set_yticks(list(y), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"ms for {record.get('strings', 0):,} strings (log scale; lower is better)")
    ax.set_title(f"String UDFs against their peers\n{_caption(record)}", fontsize=9)
    _legend_below(ax, 2)
    return _save(fig, out, record)


def plot_transfers(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    rows = record["rows"]
    fig, ax = plt.subplots(figsize=(7, 4.6))
    directions = ["h2d", "d2h"]
    roles = {"pinned memcpy (ceiling)": "pinned", "arrowdev": "arrowdev", "CuPy, per buffer": "cupy"}
    width = 0.8 / len(roles)
    for i, (label, prefix) in enumerate(roles.items()):
        values = [next(r["gb_per_s"] for r in rows if r["direction"] == d and r["method"].startswith(prefix))
                  for d in directions]
        ceiling = prefix == "pinned"
        ax.bar([x + (i - (len(roles) - 1) / 2) * width for x in range(len(directions))], values, width, label=label,
               hatch="//" if ceiling else None, color="white" if ceiling else None,
               edgecolor="black" if ceiling else None)
    ax.set_xticks(range(len(directions)), ["host -> device", "device -> host"])
    ax.set_ylabel("GB/s")
    ax.set_ylim(0, 1.3 * max(r["gb_per_s"] for r in rows))
    ax.set_title(f"Copies of a {record['bytes'] / 2**30:.2f} GiB table\n{_caption(record)}", fontsize=9)
    _legend_below(ax, 3)
    return _save(fig, out, record)


def plot_scale(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    """Rows per second against GPU count, arrowdev and the peer (dask-cudf), one panel per mode of the run (strong:
    the same data; weak: the same rows per GPU; persisted: the job over partitions already on the GPUs), with the
    ideal line from arrowdev's fewest-GPU point (bench_scale.py --json)."""
    rows = [r for r in record["rows"] if r["mode"] != "load"]
    modes = [m for m in ("strong", "weak", "persisted") if any(r["mode"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(modes), figsize=(4.2 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        engines = sorted({r["engine"] for r in rows if r["mode"] == mode}, key=lambda e: e != "arrowdev")
        for engine, marker in zip(engines, "os^D"):
            points = sorted((r["gpus"], r["rows_per_s"] / 1e6) for r in rows if (r["mode"], r["engine"]) == (mode, engine))
            ax.plot(*zip(*points), "-", marker=marker, label=engine)
            if engine == "arrowdev":
                (g0, r0) = points[0]
                ax.plot([g for g, _ in points], [r0 * g / g0 for g, _ in points], "k:", label="arrowdev, linear")
        gpus = sorted({r["gpus"] for r in rows if r["mode"] == mode})
        ax.set_xticks(gpus)
        ax.set_xlabel("GPUs (one Dask worker each)" if "CPU" not in record["machine"] else "CPU workers")
        ax.set_ylabel("M rows / s (end to end)" if mode != "persisted" else "M rows / s (job over persisted data)")
        ax.set_ylim(bottom=0)
        ax.set_title(mode, fontsize=9)
        _legend_below(ax, 1)
    fig.suptitle(f"The scale job (examples/scale_job.py), {record.get('dataset_rows', 0):,} rows\n{_caption(record)}",
                 fontsize=9)
    return _save(fig, out, record)


def plot_hosts(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    """Per host, per UDF: ms at the largest size where the row-by-row UDF ran (10^6 rows by default), log scale."""
    rows = record["rows"]
    size = max((r["rows"] for r in rows if "row_by_row_ms" in r), default=max(r["rows"] for r in rows))
    hosts = list(dict.fromkeys(r["host"] for r in rows))
    series = [("host's row-by-row UDF", "row_by_row_ms"), ("arrowdev (CPU)", "arrowdev_ms"),
              ("arrowdev (GPU)", "arrowdev_gpu_ms"), ("native expression", "native_ms"),
              ("identity Arrow UDF (DuckDB's floor)", "identity_ms")]
    series = [(label, key) for label, key in series if any(key in r for r in rows)]
    fig, axes = plt.subplots(1, len(hosts), figsize=(4.4 * len(hosts), 5.2), squeeze=False, sharey=True)
    for ax, host in zip(axes[0], hosts):
        mine = [r for r in rows if r["host"] == host and r["rows"] == size]
        y = range(len(mine))
        height = 0.8 / len(series)
        for i, (label, key) in enumerate(series):
            ax.barh([v + (i - (len(series) - 1) / 2) * height for v in y], [r.get(key) or 0 for r in mine],
                    height=height, label=label)
        ax.set_yticks(list(y), [r["udf"] for r in mine], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel(f"ms for {size:,} rows (log; lower is better)", fontsize=8)
        ax.set_title(host, fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:  # DuckDB's panel has the identity bar the others lack
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 0.06), ncol=3, frameon=False)
    cost = record.get("fixed_cost") or {}
    load = record.get("load_average") or []
    fig.suptitle(f"UDFs in Polars, DuckDB and pandas\n{_caption(record)}; load average {load[:3]} -> {load[3:]}; "
                 f"one CPU call on 2048 rows {cost.get('arrowdev_us')} us (NumPy x * 2 + 1: {cost.get('numpy_us')} us)",
                 fontsize=8.5)
    return _save(fig, out, record, bottom=0.16)


PLOTS = {"bench_udf": ("udf_bandwidth.png", plot_udf), "bench_string_udf": ("string_udfs.png", plot_strings),
         "bench_transfer": ("transfers.png", plot_transfers), "bench_scale": ("scale_throughput.png", plot_scale),
         "bench_hosts": ("hosts.png", plot_hosts)}


def plot_udf_memory(record: dict[str, Any], out: pathlib.Path) -> pathlib.Path:
    """Peak device memory of one call over the output it makes, arrowdev against libcudf's kernels."""
    rows = record["rows"]
    fig, ax = plt.subplots(figsize=(8, 4.6))
    x = range(len(rows))
    mine = [r["peak_bytes"] / r["output_bytes"] for r in rows]
    theirs = [(r["libcudf_peak_bytes"] or 0) / (r["libcudf_output_bytes"] or 1) for r in rows]
    ax.bar([v - 0.2 for v in x], mine, width=0.4, label="arrowdev")
    ax.bar([v + 0.2 for v in x], theirs, width=0.4, label="libcudf's kernels (RMM statistics)")
    ax.axhline(1.25, color="dimgrey", lw=0.8, ls="--")
    ax.text(len(rows) - 0.5, 1.27, "arrowdev's bound: 1.25 x output (+ 256 MiB)", fontsize=7, ha="right",
            color="dimgrey")
    ax.set_xticks(list(x), [r["udf"] for r in rows], fontsize=8)
    ax.set_ylabel("peak device memory / output bytes")
    ax.set_title(f"Memory of one UDF call over {rows[0]['rows']:,} strings\n{_caption(record)}", fontsize=9)
    _legend_below(ax, 2)
    return _save(fig, out, record)


PLOTS["bench_udf_memory"] = ("udf_memory.png", plot_udf_memory)


def main(argv: list[str] | None = None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--out", type=pathlib.Path, default=HERE.parent / "docs" / "images")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (image, plot) in PLOTS.items():
        if not (args.results / f"{name}.json").exists():  # a benchmark not yet run where it means something
            print(f"{name}.json: not recorded, {image} not drawn")
            continue
        record = json.loads((args.results / f"{name}.json").read_text())
        written.append(plot(record, args.out / image))
        print(f"{args.out / image}")
    return written


if __name__ == "__main__":
    main()
