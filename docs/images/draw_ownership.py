"""Draws docs/images/ownership.png: who holds a reference to a container (docs/ownership.md).

    python3 docs/images/draw_ownership.py

Needs matplotlib (the ``docs`` extra).
"""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "ownership.png"

BOXES = {  # name: (x, y, width, height, text, colour)
    "producer": (0.5, 8.2, 9.0, 1.1, "producer's ArrowDeviceArray (PyArrow, Polars, nanoarrow, a C library...)\n"
                 "its release runs exactly once, when the container's count reaches 0", "#f2f2f2"),
    "container": (2.0, 5.6, 6.0, 1.4, "Container A\nrefs: an atomic count    array: the producer's struct, moved in\n"
                  "keepalive: NULL", "#cfe2f3"),
    "chunk": (0.0, 2.6, 3.0, 1.4, "CDeviceArray\n(one chunk of an ArrowColumn,\na table's column, a slice...)",
              "#d9ead3"),
    "export": (3.5, 2.6, 3.0, 1.4, "an exported tree\n(a consumer's: PyArrow, Polars...)\ntop, children, dictionary",
               "#fff2cc"),
    "derived": (7.0, 2.6, 3.0, 1.4, "Container B\n(a slice, child, dictionary\nor field of A)", "#cfe2f3"),
    "moved": (3.5, 0.2, 3.0, 1.2, "a child the consumer moved out:\nreleased on its own, in any order", "#fff2cc"),
    "slice": (7.0, 0.2, 3.0, 1.2, "CDeviceArray over B\n(e.g. col[1:3])", "#d9ead3"),
}
ARROWS = [  # (from, to, label)
    ("producer", "container", "moved in: bitwise copy, then the source's release := NULL"),
    ("chunk", "container", "1 reference"),
    ("export", "container", "1 reference per node"),
    ("derived", "container", "1 reference per node\n(B's producer struct is an export of A)"),
    ("moved", "export", "moved out of this tree;\nits reference on A stays"),
    ("slice", "derived", "1 reference"),
]


def _anchor(name: str, side: str) -> tuple[float, float]:
    x, y, w, h, *_ = BOXES[name]
    return (x + w / 2, y + h) if side == "top" else (x + w / 2, y)


def main() -> pathlib.Path:
    fig, ax = plt.subplots(figsize=(10, 7))
    for x, y, w, h, text, colour in BOXES.values():
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", facecolor=colour, edgecolor="black"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8.5)
    for source, target, label in ARROWS:
        start = _anchor(source, "bottom" if source == "producer" else "top")
        end = _anchor(target, "top" if source == "producer" else "bottom")
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color="black"))
        ax.text((start[0] + end[0]) / 2 + 0.1, (start[1] + end[1]) / 2, label, fontsize=7.5, color="#333333",
                ha="left", va="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_xlim(-0.3, 10.3)
    ax.set_ylim(-0.1, 9.6)
    ax.axis("off")
    ax.set_title("Who holds a container: the producer's release runs when the last reference goes", fontsize=10)
    drawn_by = "Drawn by: python3 docs/images/draw_ownership.py"
    fig.text(0.01, 0.005, drawn_by, fontsize=6.5, color="dimgrey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(OUT, dpi=110, metadata={"Software": None, "Source": drawn_by})
    plt.close(fig)
    return OUT


if __name__ == "__main__":
    print(main())
