"""The pictures of an A/B screen: per operator, every shape's delta per round against the noise
it was judged against and the baseline's delta (``<op>/delta.svg``); for the whole screen, each
operator's range, median and effect against its noise, sorted (``overview.svg``/``.png``).

matplotlib belongs to the user (``pip install pytest-zlbench[plot]``): it is imported here only,
through its object API (no pyplot, no backend switch); without it nothing is drawn and the
caller says so in one line (:data:`MISSING`). Both pictures read the result's JSON form
(``OpResult.to_json``, ``screen_result.json``), the numbers in percent.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..contract import AB_FILE
from ..core import records, screening
from ..core.report import most_telling

PLOT_FILE = "delta.svg"
OVERVIEW_FILE = "overview.svg"
OVERVIEW_PNG = "overview.png"
MISSING = "matplotlib is not installed (pip install pytest-zlbench[plot]): no picture drawn"
_WRAP = 56  # characters of a shape's label per line: a label is wrapped, never cut
_XLABEL = "delta = B / A − 1 (%): positive, side B slower"
_VERDICT_COLORS = {
    screening.IR_CHANGED: "tab:red",
    screening.NO_IR_DIFF: "tab:gray",
    screening.NO_TRITON: "tab:purple",
    screening.IR_UNKNOWN: "tab:orange",
    screening.SPECIALISATION_ONLY: "tab:olive",
}
# the marks drawn over the deltas
_BASELINE_MARK = {"marker": "x", "s": 26, "color": "tab:green", "zorder": 4}
_FLIP_MARK = {"s": 90, "facecolors": "none", "edgecolors": "tab:red", "zorder": 5}
_EFFECT_MARK = {"marker": "*", "s": 110, "color": "gold", "edgecolors": "black", "zorder": 5}


def unavailable() -> str | None:
    """Why nothing can be drawn (one line), or ``None`` when matplotlib imports."""
    try:
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            return MISSING
        first = (str(exc).splitlines() or [""])[0]
        return f"matplotlib could not be imported ({type(exc).__name__}: {first}): no picture"
    return None


def available() -> bool:
    return unavailable() is None


def entry_of(result: screening.OpResult | Mapping[str, Any]) -> Mapping[str, Any]:
    """A result's JSON form (what ``ab.json`` holds), which every picture reads."""
    return result.to_json() if isinstance(result, screening.OpResult) else result


def _test_name(node: str | None) -> str:
    """A test's name without its file: ``test_mm.py::test_mm[x]`` -> ``test_mm[x]``."""
    return (node or "").rsplit("::", 1)[-1]


def shape_label(shape: Mapping[str, Any]) -> str:
    """A shape's full label (test, dtype, size detail, ``#n`` of a repeat), wrapped."""
    text = f"{str(shape['dtype']).removeprefix('torch.')} {shape['shape']}"
    if shape.get("occurrence"):
        text += f" #{int(shape['occurrence']) + 1}"
    test = _test_name(shape.get("test"))
    if test:
        text = f"{test}: {text}"
    return "\n".join(textwrap.wrap(text, _WRAP, break_on_hyphens=False)) or "?"


def _rounds_label(n: int) -> str:
    return "1 round (no spread between rounds)" if n == 1 else f"each of {n} rounds"


def _save_svg(fig: Any, path: Path, description: str | None = None) -> None:
    import matplotlib

    buffer = io.StringIO()
    metadata = {"Date": None} if description is None else {"Date": None, "Description": description}
    # text stays text (selectable, searchable, a third of the size of glyph paths)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", metadata=metadata)
    records.write_atomic(path, buffer.getvalue())


# what an operator's plot shows, and all that write() reads of a result
_OP_KEYS = ("op", "verdict", "control", "range_label", "low_pct", "high_pct", "judged", "beyond")
_SHAPE_KEYS = (
    "dtype",
    "shape",
    "occurrence",
    "test",
    "noise_pct",
    "median_pct",
    "beyond_noise",
    "baseline_median_pct",
    "sign_flip",
)
_STAMP = "zlbench-plot "  # then the digest of what the plot shows, in the SVG's description
#: raised whenever write() draws differently, so that every plot is drawn again
_PLOT_FORMAT = 3


def _plotted(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a result an operator's plot shows: :func:`write` draws from it alone, so
    its digest, written into the SVG, says whether a plot on disk shows a result."""
    return {
        **{key: entry.get(key) for key in _OP_KEYS},
        "shapes": [
            {
                **{key: s.get(key) for key in _SHAPE_KEYS},
                "rounds": [{"delta_pct": r["delta_pct"]} for r in s["rounds"]],
            }
            for s in entry.get("shapes") or ()
        ],
    }


def _stamp(data: Mapping[str, Any]) -> str:
    text = json.dumps([_PLOT_FORMAT, data], sort_keys=True, default=str)
    return _STAMP + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def shows(path: Path, result: screening.OpResult | Mapping[str, Any]) -> bool:
    """Whether the plot at ``path`` shows ``result`` (what :func:`write` would draw of it)."""
    return _shows(path, _stamp(_plotted(entry_of(result))))


def holds(op_dir: Path, result: screening.OpResult | Mapping[str, Any]) -> bool:
    """Whether ``op_dir``'s ``ab.json`` draws the plot ``result`` would (a plot process, which
    reads it, draws what this process would)."""
    try:
        entry = json.loads((op_dir / AB_FILE).read_text(encoding="utf-8"))
        return _stamp(_plotted(entry)) == _stamp(_plotted(entry_of(result)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _shows(path: Path, stamp: str) -> bool:
    """Whether the SVG at ``path`` was drawn from the data of ``stamp`` (it is near the top)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return stamp in handle.read(8192)
    except (OSError, UnicodeDecodeError):
        return False


def _noise_band(ax: Any, ys: Sequence[int], noises: Sequence[float | None], label: str) -> None:
    """The grey ± band of the noise each line was judged against; none, and no legend entry,
    where no line has a noise above 0 (a band of no width shows nothing)."""
    if any(n for n in noises):
        half = [n or 0.0 for n in noises]
        ax.barh(
            ys,
            [2 * n for n in half],
            left=[-n for n in half],
            height=0.7,
            color="0.88",
            label=label,
        )


def _marks(
    ax: Any, points: Sequence[tuple[float | None, int]], label: str, style: Mapping[str, Any]
) -> None:
    """A scatter of the ``(x, y)`` points that have an ``x`` (none at all when none has)."""
    kept = [(x, y) for x, y in points if x is not None]
    if kept:
        ax.scatter([x for x, _ in kept], [y for _, y in kept], label=label, **style)


def _legend_below(fig: Any, ax: Any) -> None:
    """The legend under the axes, outside them: it never covers a point or a noise band."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncols=2, frameon=False)


#: the most shapes an operator's plot draws: its height stays bounded (5,000 shapes drew an
#: SVG 122,558 pt tall, and most of a large screen's end was spent drawing); ``ab.json`` and
#: the report's shape table hold every shape
PLOT_SHAPES_MOST = 60


def write(path: Path, result: screening.OpResult | Mapping[str, Any]) -> bool:
    """Write ``path`` (an SVG) for one operator's result, unless the plot there already shows
    what this result's plot would (``True`` either way: a screen's end judges every operator
    again, and most plots stay as they were); ``False`` when matplotlib is missing or the
    result has no range (NO_ROWS, a failed round): then a plot left by an earlier aggregation
    is removed, so that no plot contradicts ``screen.tsv``."""
    entry = _plotted(entry_of(result))
    shapes: Sequence[Mapping[str, Any]] = entry["shapes"]
    if entry.get("low_pct") is None or not shapes:
        path.unlink(missing_ok=True)
        return False
    stamp = _stamp(entry)
    if _shows(path, stamp):
        return True
    try:
        from matplotlib.figure import Figure
    except ImportError:
        path.unlink(missing_ok=True)
        return False
    total = len(shapes)
    shapes = most_telling(shapes, PLOT_SHAPES_MOST)
    labels = [shape_label(s) for s in shapes]
    lines = sum(label.count("\n") + 1 for label in labels)
    rounds = max(len(s["rounds"]) for s in shapes)
    fig = Figure(figsize=(10.0, 2.2 + 0.22 * lines + 0.12 * len(shapes)), layout="constrained")
    ax = fig.add_subplot()
    ys = list(range(len(shapes)))[::-1]  # the first shape on top
    ax.axvline(0.0, color="black", linewidth=0.8)
    _noise_band(ax, ys, [s.get("noise_pct") for s in shapes], "noise it was judged against (±)")
    for y, s in zip(ys, shapes, strict=True):
        deltas = [r["delta_pct"] for r in s["rounds"]]
        if len(deltas) > 1:
            ax.hlines(y, min(deltas), max(deltas), color="tab:blue", linewidth=1.2)
        ax.scatter(deltas, [y] * len(deltas), s=10, color="0.35", zorder=3)
    ax.scatter([], [], s=10, color="0.35", label=_rounds_label(rounds))
    medians = [s["median_pct"] for s in shapes]
    beyond = [bool(s.get("beyond_noise")) for s in shapes]
    ax.scatter(
        medians,
        ys,
        s=28,
        color=["tab:red" if b else "tab:blue" for b in beyond],
        zorder=4,
        label="median over rounds, both orders alike (red: beyond noise)"
        if rounds > 1
        else "delta",
    )
    base = [(s["baseline_median_pct"], y) for y, s in zip(ys, shapes, strict=True)]
    _marks(ax, base, "baseline (reference) delta: the machine's move", _BASELINE_MARK)
    flips = [(s["median_pct"], y) for y, s in zip(ys, shapes, strict=True) if s.get("sign_flip")]
    _marks(ax, flips, f"sign changes across rounds ({len(flips)})", _FLIP_MARK)
    ax.set_yticks(ys, labels, fontsize=7)
    ax.set_ylim(-0.7, len(shapes) - 0.3)
    ax.set_xlabel(_XLABEL)
    kind = "A/A control" if entry.get("control") else entry.get("verdict")
    label = entry.get("range_label")
    span = f"{entry['low_pct']:+.2f}% ~ {entry['high_pct']:+.2f}%"
    title = f"{entry['op']}: {kind}, range {(label + ' ') if label else ''}{span}"
    if entry.get("judged") is not None:
        title += f"; {entry.get('beyond')} of {entry.get('judged')} shapes beyond noise"
    if total > len(shapes):
        title += (
            f"; {len(shapes)} of {total} shapes shown (those beyond noise, then the largest "
            "medians): every shape is in ab.json"
        )
    ax.set_title("\n".join(textwrap.wrap(title, 100)), fontsize=9)
    _legend_below(fig, ax)
    ax.grid(axis="x", linewidth=0.3)
    _save_svg(fig, path, stamp)
    return True


#: the most operators the overview draws: beyond it the picture is unreadable (and 1,000 took
#: minutes to draw); the report's table lists every operator
OVERVIEW_MOST = 60


def _most_telling(entries: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """At most :data:`OVERVIEW_MOST` operators: those with shapes beyond noise first, then the
    largest medians either way."""
    if len(entries) <= OVERVIEW_MOST:
        return list(entries)
    ranked = sorted(entries, key=lambda e: (not e.get("beyond"), -abs(float(e["median_pct"]))))
    return ranked[:OVERVIEW_MOST]


def write_overview(path: Path, doc: Mapping[str, Any]) -> bool:
    """Write the screen's overview (SVG at ``path``, a PNG beside it): per operator with a
    range, the range (bar), the median (dot), the effect beyond noise (star) and the noise it
    was judged against (grey band), sorted by median, coloured by verdict. ``False`` when no
    operator has a range or matplotlib is missing."""
    ranged = [e for e in doc.get("operators", ()) if e.get("low_pct") is not None]
    png = path.with_suffix(".png")
    if not ranged:
        path.unlink(missing_ok=True)
        png.unlink(missing_ok=True)
        return False
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    total = len(ranged)
    ranged = _most_telling(ranged)
    ranged.sort(key=lambda e: e["median_pct"])
    ys = list(range(len(ranged)))
    fig = Figure(figsize=(10.0, 2.4 + 0.3 * len(ranged)), layout="constrained")
    ax = fig.add_subplot()
    ax.axvline(0.0, color="black", linewidth=0.8)
    noise = [e.get("noise_pct") for e in ranged]
    _noise_band(ax, ys, noise, "noise its shapes were judged against (median, ±)")
    for y, e in zip(ys, ranged, strict=True):
        color = _VERDICT_COLORS.get(str(e.get("verdict")), "black")
        ax.hlines(y, e["low_pct"], e["high_pct"], color=color, linewidth=2)
        ax.scatter([e["median_pct"]], [y], s=30, color=color, zorder=4)
    for verdict, color in _VERDICT_COLORS.items():
        if any(e.get("verdict") == verdict for e in ranged):
            ax.plot([], [], color=color, linewidth=2, marker="o", label=f"{verdict}: range, median")
    effects = [(e["effect_pct"], y) for y, e in zip(ys, ranged, strict=True)]
    _marks(ax, effects, "effect: median over shapes beyond noise", _EFFECT_MARK)
    labels = []
    for e in ranged:
        beyond = f", {e['beyond']}/{e['judged']} beyond" if e.get("judged") is not None else ""
        labels.append(f"{e['op']} ({e.get('verdict')}{beyond})")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_ylim(-0.7, len(ranged) - 0.3)
    ax.set_xlabel(_XLABEL)
    switch = doc.get("switch")
    what = " ".join(f"{k}={v}" for k, v in (switch or {}).items()) or (
        "A/A control" if switch == {} else str(doc.get("kind"))
    )
    floor = doc.get("noise_floor") or {}
    title = f"{what}: {len(ranged)} operators, range of per-shape medians"
    if total > len(ranged):
        title = (
            f"{what}: {len(ranged)} of {total} operators (those beyond noise, then the "
            "largest medians), range of per-shape medians"
        )
    if floor.get("source") not in (None, "", "none"):
        title += f"; noise floor from {floor['source']}"
    ax.set_title("\n".join(textwrap.wrap(title, 100)), fontsize=9)
    _legend_below(fig, ax)
    ax.grid(axis="x", linewidth=0.3)
    _save_svg(fig, path)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    tmp = png.with_name(f".{png.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(png)
    return True


def no_plot_line(name: str, exc: BaseException) -> str:
    """The one line that says why ``name``'s plot was not drawn."""
    first = (str(exc).splitlines() or [""])[0]
    return f"zlbench: {name}: no plot ({type(exc).__name__}: {first})"


def _guarded(name: str, drawing: Callable[[], bool], inside: Path | None) -> bool | None:
    """``drawing()``, where a failure is one line on stderr (:func:`no_plot_line`) and
    ``None``: a picture is an extra, it never costs a screen its results, nor the other
    pictures. An OSError about a file under ``inside`` (the folder the caller writes to)
    propagates: that folder is not writable, which no other picture will get past."""
    try:
        return drawing()
    except Exception as exc:
        if isinstance(exc, OSError) and inside is not None and _names_a_file_under(exc, inside):
            raise
        sys.stderr.write(no_plot_line(name, exc) + "\n")
        return None


def _names_a_file_under(exc: OSError, folder: Path) -> bool:
    """Whether ``exc`` is about a file inside ``folder`` (and not, say, matplotlib's cache);
    a full disk (a write names no file) counts as the folder's."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    top = folder.resolve()
    for name in (exc.filename, exc.filename2):
        if not isinstance(name, (str, bytes, os.PathLike)):
            continue
        try:
            if Path(os.fsdecode(name)).resolve().is_relative_to(top):
                return True
        except (OSError, RuntimeError):  # a name that loops lies nowhere
            continue
    return False


def draw(
    path: Path,
    result: screening.OpResult | Mapping[str, Any],
    name: str,
    inside: Path | None = None,
) -> bool | None:
    """:func:`write`, guarded (:func:`_guarded`); after a failure no plot of another result
    stays in its place."""
    drawn = _guarded(name, lambda: write(path, result), inside)
    if drawn is None and not shows(path, result):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass
    return drawn


def draw_overview(path: Path, doc: Mapping[str, Any], inside: Path | None = None) -> bool | None:
    """:func:`write_overview`, guarded (:func:`_guarded`)."""
    return _guarded("overview", lambda: write_overview(path, doc), inside)


def main(argv: Sequence[str]) -> int:
    """``python -m pytest_zlbench.adapters.plot OP_DIR...``: each operator's plot from its
    ``ab.json`` (the end of a screen of many operators draws them in a few such processes:
    ``screen.results.draw_in_processes``). A plot that cannot be drawn is one line on stderr;
    the caller draws what is missing."""
    for name in argv:
        op_dir = Path(name)
        try:
            entry = json.loads((op_dir / AB_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            sys.stderr.write(no_plot_line(op_dir.name, exc) + "\n")
            continue
        draw(op_dir / PLOT_FILE, entry, op_dir.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
