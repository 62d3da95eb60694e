"""Draws docs/images/layers.png: arrowdev's layers, bottom to top, as tests/test_architecture.py's
``LAYERS`` lists them (docs/architecture.md).

    python3 docs/images/draw_layers.py

Needs matplotlib (the ``docs`` extra).
"""

from __future__ import annotations

import ast
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "images" / "layers.png"

# What each layer is for, in a few words (the layer names are LAYERS' own).
ROLES = {
    "native core and errors": "C: the Arrow C structs, the shared-ownership container, checks; exception types",
    "CUDA runtime": "devices, streams, events, the accounted pool, staging: no Arrow types",
    "core": "DataType, the layout table, chunks, import from and export to the PyCapsule protocols",
    "interop": "PyArrow conversions; CuPy / numba / PyTorch views",
    "device API": "copies of columns, CUDA IPC, captured calls, numba's memory manager",
    "serialization": "a header and frames of the rows in range: pickle, Dask's families",
    "UDF definitions": "what a kernel is compiled for (spec), ad.NA, the compilers found",
    "UDF compile": "typing probe, kernel source, numba / numba-cuda, caches; strings' numba extension",
    "UDF run": "inputs read in place, launches, outputs, string results, prepared calls",
    "UDF API": "arrowdev.udf: the public names",
    "user objects": "ArrowColumn, ArrowTable, arrowdev.debug",
    "engine hosts": "Dask, Ray, Spark (and Polars, DuckDB, pandas): each its own module",
    "public names": "arrowdev, arrowdev.dask / .ray / .spark (facades)",
}


def layers() -> list[tuple[str, tuple[str, ...]]]:
    """LAYERS from tests/test_architecture.py, read without importing it."""
    tree = ast.parse((ROOT / "tests" / "test_architecture.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "LAYERS":
            return ast.literal_eval(node.value)
    raise LookupError("LAYERS not found in tests/test_architecture.py")


def _folders(prefixes: tuple[str, ...]) -> str:
    names = []
    for prefix in prefixes:
        path = ROOT / prefix.replace(".", "/")
        if prefix == "arrowdev":
            names.append("arrowdev/__init__.py")
        else:
            names.append(prefix.replace(".", "/") + ("/" if path.is_dir() else ".py"))
    return ", ".join(n.replace("arrowdev/_capsules.py", "capsules/ (arrowdev._capsules)") for n in names)


def main() -> pathlib.Path:
    rows = layers()
    fig, ax = plt.subplots(figsize=(11, 0.62 * len(rows) + 0.9))
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.2, len(rows) + 0.6)
    ax.axis("off")
    for i, (name, prefixes) in enumerate(rows):
        colour = "#cfe2f3" if i < 3 else "#d9ead3" if i < 10 else "#fff2cc"
        ax.add_patch(FancyBboxPatch((0.1, i + 0.05), 10.8, 0.82, boxstyle="round,pad=0.02", fc=colour, ec="#555"))
        ax.text(0.25, i + 0.62, f"{name}", fontsize=10, weight="bold", va="center")
        ax.text(3.0, i + 0.62, _folders(prefixes), fontsize=9, family="monospace", va="center")
        ax.text(3.0, i + 0.27, ROLES.get(name, ""), fontsize=8.5, va="center", color="#333")
    ax.annotate("", xy=(10.65, 0.2), xytext=(10.65, len(rows) - 0.2),
                arrowprops={"arrowstyle": "->", "lw": 1.5, "color": "#a00"})
    ax.text(5.5, len(rows) + 0.25, "arrowdev's layers: a module imports its own layer and those below (arrow: "
            "the direction of imports)\ndrawn by docs/images/draw_layers.py from tests/test_architecture.py's LAYERS",
            ha="center", fontsize=9.5)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    plt.close(fig)
    return OUT


if __name__ == "__main__":
    print(main())
