"""The per-operator plot of an A/B screen (SPEC §8): each shape's delta, its median over the
rounds, and how far the rounds spread. matplotlib belongs to the user: it is imported here only,
through its object API (no pyplot, no backend switch), and without it there is no plot."""

from __future__ import annotations

import io
from pathlib import Path

from ..core import records, screening

PLOT_FILE = "delta.svg"
_LABEL_CHARS = 44


def _label(key: screening.Key) -> str:
    _, dtype, shape, occurrence = key
    text = f"{dtype.removeprefix('torch.')} {shape}"
    if len(text) > _LABEL_CHARS:
        text = text[: _LABEL_CHARS - 1] + "…"
    return f"{text} #{occurrence + 1}" if occurrence else text


def write(path: Path, result: screening.OpResult) -> bool:
    """Write ``path`` (an SVG) for one operator's result; ``False`` when matplotlib is missing
    or the result has no range (NO_ROWS, NO_TRITON, a failed round): then a plot left by an
    earlier aggregation is removed, so that no plot contradicts ``screen.tsv``."""
    if not result.has_range:
        path.unlink(missing_ok=True)
        return False
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    shapes = result.shapes
    xs = list(range(len(shapes)))
    medians = [s.median * 100 for s in shapes]
    low = [(s.median - min(s.deltas)) * 100 for s in shapes]
    high = [(max(s.deltas) - s.median) * 100 for s in shapes]
    fig = Figure(figsize=(max(6.0, 0.32 * len(shapes) + 2.5), 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.axhline(0.0, color="black", linewidth=0.8)
    rounds = "round" if result.rounds == 1 else "rounds"
    ax.errorbar(
        xs,
        medians,
        yerr=[low, high],
        fmt="o",
        color="tab:blue",
        capsize=3,
        label=f"median over {result.rounds} {rounds}; bar: lowest to highest round",
    )
    for x, s in zip(xs, shapes, strict=True):
        ax.scatter([x] * len(s.deltas), [d * 100 for d in s.deltas], s=9, color="0.45", zorder=3)
    flips = [x for x, s in zip(xs, shapes, strict=True) if s.sign_flip]
    if flips:
        ax.scatter(
            flips,
            [medians[x] for x in flips],
            s=60,
            facecolors="none",
            edgecolors="tab:red",
            zorder=4,
            label=f"sign changes across rounds ({len(flips)})",
        )
    ax.set_xticks(xs, [_label(s.key) for s in shapes], rotation=90, fontsize=7)
    ax.set_ylabel("delta = B / A - 1 (%); negative: B faster")
    kind = "A/A control" if result.control else result.verdict
    ax.set_title(f"{result.op}: {kind}  {result.range_text()}", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", linewidth=0.3)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    records.write_atomic(path, buffer.getvalue())
    return True
