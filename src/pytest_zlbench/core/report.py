"""``report.html``: one page of a screen's result document (``core.result``) that answers
first: a headline (how many operators got slower or faster beyond noise, how many did not
change beyond it, how many were not judged, and the switch), then the operators' table with
``screen.tsv``'s columns and a legend of its colours, its notes as numbered footnotes, the
overview picture, per operator its notes, picture and every shape's per-round deltas, and last
what every column means. The first :data:`DETAILED` operators (those beyond noise first) get
their picture (inline SVG) and shape table on the page; the others link to the files beside it
(``<op>/delta.svg``, ``<op>/ab.json``), so that a screen of 1,000 operators stays a few MB.
There is no script and no link outside the screen's folder: it reads offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .records import CALIBER_FIELDS
from .screen_tsv import SHOWN, ScreenLine

#: operators shown whole (picture and shape table), those beyond noise first; the others are
#: linked to their files beside the page
DETAILED = 40
#: the most shapes of one operator the page lists (``<op>/ab.json`` holds every one): 5,000
#: shapes of one operator made a page of 5.7 MB
SHAPES_MOST = 200
PLOT_FILE = "delta.svg"  # adapters.plot.PLOT_FILE (core does not import adapters)
AB_FILE = "ab.json"  # contract.AB_FILE

#: verdicts under which no IR stage was compared (the result still names the default stage)
NO_STAGE = ("NO_TRITON", "IR_UNKNOWN", "NO_ROWS")

#: how an operator reads in the headline and its row's colour, from its result's own fields
SLOWER, FASTER, MIXED, UNCHANGED, NOT_JUDGED = (
    "slower",
    "faster",
    "mixed",
    "unchanged",
    "not judged",
)
#: the colours of the table's rows and what each means (the legend under the table)
COLOURS: dict[str, tuple[str, str]] = {
    SLOWER: ("#fde8e8", "slower beyond noise: side B slower on every shape beyond noise"),
    FASTER: ("#e8f4fd", "faster beyond noise: side B faster on every shape beyond noise"),
    MIXED: ("#fff4d6", "mixed: some shapes slower, some faster beyond noise"),
    UNCHANGED: ("#ffffff", "no change beyond noise: judged, no shape beyond noise"),
    NOT_JUDGED: ("#f0f0f0", "not judged: one round, no noise to judge against, failed or cut"),
}

#: every column on the page: what it holds
COLUMN_MEANINGS: dict[str, str] = {
    "op": "the operator (its tests' mark); links to its section",
    "verdict": "what the IR fingerprints say: IR_CHANGED, NO_IR_DIFF (identical IR), "
    "SPECIALISATION_ONLY, IR_UNKNOWN (not comparable), NO_TRITON (no Triton kernel was "
    "compiled: nothing to fingerprint, the timings are still judged), NO_ROWS, or the status "
    "of an operator without a verdict (failed, cut)",
    "rounds": "rounds whose deltas are in the numbers",
    "rows": "rows paired in every round (k/n: k of the n rows seen paired)",
    "low_pct": "the range's low end: the lowest per-shape median delta, %",
    "high_pct": "the range's high end: the highest per-shape median delta, %",
    "median_pct": "the median over shapes of each shape's median delta over rounds, %",
    "beyond": "shapes beyond noise (0: judged, none beyond; empty: not judged)",
    "slower": "of the shapes beyond noise, how many got slower (delta > 0)",
    "faster": "of the shapes beyond noise, how many got faster (delta < 0)",
    "effect_pct": "the median estimate over the shapes beyond noise, % (empty: none beyond noise)",
    "noise_pct": "the median over shapes of the half-width of each shape's 95 % confidence "
    "interval, ± % (per shape: that half-width)",
    "status": "complete, failed, cut, running or not started",
    "stage": "the first IR stage that differs between the sides (empty without Triton IR)",
    "note": "a numbered footnote under the table: the range's label, the status, the notes",
    "test": "the test that measured the shape",
    "dtype": "the shape's dtype",
    "shape": "the shape's size detail (#k: its k-th occurrence in the test)",
    "latency_a_ms": "side A's latency of the candidate, ms (median over rounds)",
    "rK_delta_pct": "the delta in round K, %",
    "baseline_median_pct": "the same median for the baseline (reference) implementation, "
    "which no switch reaches: how much the machine itself moved between the sides, %",
    "corrected_median_pct": "median_pct corrected by the baseline's move: "
    "(1 + median) / (1 + baseline median) - 1, %",
}

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
table{border-collapse:collapse;font-size:13px;margin:.6em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th a{color:inherit;text-decoration:none;border-bottom:1px dotted #888}
td.n{text-align:right;font-variant-numeric:tabular-nums}
p.headline{font-size:1.25em;margin:.4em 0}
.swatch{display:inline-block;width:1.1em;height:.9em;border:1px solid #999;vertical-align:middle;
margin:0 .3em 0 1em}
ol.notes{font-size:13px;max-width:75em} dl.columns dt{font-family:monospace;margin-top:.3em}
.muted{color:#666;font-size:12px} svg{max-width:100%;height:auto}
"""


def classify(entry: Mapping[str, Any]) -> str:
    """How an operator reads in the headline, from its result's own fields: ``judged`` (shapes
    judged; none or 0: not judged), ``beyond``, ``slower`` and ``faster`` (shapes beyond noise
    in each direction); an operator that did not complete is not judged."""
    if entry.get("status") not in (None, "", "complete") or not entry.get("judged"):
        return NOT_JUDGED
    if not entry.get("beyond"):
        return UNCHANGED
    slower, faster = int(entry.get("slower") or 0), int(entry.get("faster") or 0)
    if slower and not faster:
        return SLOWER
    if faster and not slower:
        return FASTER
    return MIXED


def _switch_text(doc: Mapping[str, Any]) -> str:
    switch = doc.get("switch")
    return " ".join(f"{k}={v}" for k, v in (switch or {}).items()) or (
        "none (A/A control)" if switch == {} else "—"
    )


def headline(doc: Mapping[str, Any]) -> str:
    """The page's first line: ``N operators slower beyond noise, M faster, K with no change
    beyond noise, J not judged; switch S on side B, R rounds``, then the operators that moved."""
    entries = list(doc.get("operators", ()))
    kinds = [classify(e) for e in entries]
    n = {k: kinds.count(k) for k in (SLOWER, FASTER, MIXED, UNCHANGED, NOT_JUDGED)}
    total = len(entries)
    parts = [
        f"{n[SLOWER]} of {total} operator{'s' if total != 1 else ''} slower beyond noise",
        f"{n[FASTER]} faster",
    ]
    if n[MIXED]:
        parts.append(f"{n[MIXED]} mixed")
    parts += [f"{n[UNCHANGED]} with no change beyond noise", f"{n[NOT_JUDGED]} not judged"]
    rounds = (doc.get("settings") or {}).get("rounds")
    where = f"switch {_switch_text(doc)}" + (" on side B" if doc.get("switch") else "")
    text = ", ".join(parts) + f"; {where}" + (f", at most {rounds} rounds" if rounds else "")
    moved = [
        f"{e['op']} {float(e['effect_pct']):+.1f} %"
        for e in _moved(entries)
        if e.get("effect_pct") is not None
    ]
    if moved:
        text += f". Beyond noise: {', '.join(moved[:10])}" + (", ..." if len(moved) > 10 else "")
    return text + "."


def _legend() -> str:
    items = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{escape(meaning)}'
        for colour, meaning in COLOURS.values()
    )
    return f'<p class="muted">row colours:{items}</p>'


def _th(name: str) -> str:
    key = "rK_delta_pct" if name.startswith("r") and name.endswith("_delta_pct") else name
    meaning = COLUMN_MEANINGS.get(key, "")
    return f'<th><a href="#col-{escape(key)}" title="{escape(meaning)}">{escape(name)}</a></th>'


def _columns() -> list[str]:
    out = ['<h2 id="columns">Columns</h2>', '<dl class="columns">']
    for name, meaning in COLUMN_MEANINGS.items():
        out.append(f'<dt id="col-{escape(name)}">{escape(name)}</dt><dd>{escape(meaning)}</dd>')
    out.append("</dl>")
    out.append(
        '<p class="muted">delta = B/A - 1 in percent (every *_pct column): positive means side '
        "B is slower. A shape is beyond noise when a paired t-test on its rounds, its variance "
        "shrunk toward its size class's noise (the noise floor line at the top says where that "
        "came from), is significant with the false discovery rate held across the screen, and "
        "its estimate is at least the minimum effect.</p>"
    )
    return out


def _svg(text: str) -> str:
    """An SVG file's text without its XML prologue, to sit inside HTML."""
    start = text.find("<svg")
    return text[start:] if start >= 0 else ""


def _cell(value: Any, numeric: bool = False) -> str:
    text = "" if value is None else str(value)
    return f'<td class="n">{escape(text)}</td>' if numeric else f"<td>{escape(text)}</td>"


def _pct(value: Any) -> str:
    return "" if value is None else f"{float(value):+.3f}"


def _operators_table(doc: Mapping[str, Any]) -> list[str]:
    """The table, its colours' legend and its notes as numbered footnotes (a note in a cell
    was squeezed into a column of a few words a line)."""
    headers = [c for c in SHOWN if c != "note"] + ["status", "stage", "note"]
    out = ["<table><tr>" + "".join(_th(h) for h in headers) + "</tr>"]
    notes: list[tuple[str, str]] = []
    for entry in doc.get("operators", ()):
        line = ScreenLine.from_entry(entry)
        colour = COLOURS[classify(entry)][0]
        css = f' style="background:{colour}"' if colour != "#ffffff" else ""
        cells = []
        for h in headers:
            if h == "note":
                note = line.footnote()
                if note:
                    notes.append((line.op, note))
                    k = len(notes)
                    cells.append(f'<td><a href="#note-{k}">[{k}]</a></td>')
                else:
                    cells.append(_cell(""))
            elif h == "op":
                cells.append(f'<td><a href="#op-{escape(line.op)}">{escape(line.op)}</a></td>')
            elif h == "verdict":
                cells.append(_cell(line.shown_verdict))
            elif h == "stage" and line.verdict in NO_STAGE:
                cells.append(_cell(""))  # no Triton IR compared: no stage to name
            else:
                value = line.cell(h)
                cells.append(_cell(value, numeric=h not in ("verdict", "status", "stage")))
        out.append(f"<tr{css}>" + "".join(cells) + "</tr>")
    out.append("</table>")
    out.append(_legend())
    if notes:
        out.append('<ol class="notes">')
        out += [
            f'<li id="note-{k}"><b>{escape(op)}</b>: {escape(text)}</li>'
            for k, (op, text) in enumerate(notes, 1)
        ]
        out.append("</ol>")
    return out


def most_telling(shapes: Sequence[Mapping[str, Any]], most: int) -> list[Mapping[str, Any]]:
    """At most ``most`` of an operator's ``shapes`` (its result's JSON form), in their order:
    those beyond noise first, then the largest medians either way."""
    if len(shapes) <= most:
        return list(shapes)
    ranked = sorted(
        range(len(shapes)),
        key=lambda k: (
            not shapes[k].get("beyond_noise"),
            -abs(float(shapes[k].get("median_pct") or 0.0)),
        ),
    )
    return [shapes[k] for k in sorted(ranked[:most])]


def _shapes_table(entry: Mapping[str, Any]) -> list[str]:
    every = entry.get("shapes") or ()
    if not every:
        return []
    shapes = most_telling(every, SHAPES_MOST)
    # each delta under its round's number (a round that failed leaves a gap)
    numbers = sorted({r.get("round", i + 1) for s in shapes for i, r in enumerate(s["rounds"])})
    head = ["test", "dtype", "shape", "latency_a_ms"]
    head += [f"r{k}_delta_pct" for k in numbers]
    head += ["median_pct", "baseline_median_pct", "corrected_median_pct", "noise_pct", "beyond"]
    out = ["<table><tr>" + "".join(_th(h) for h in head) + "</tr>"]
    for s in shapes:
        by_round = {r.get("round", i + 1): r["delta_pct"] for i, r in enumerate(s["rounds"])}
        deltas = [_pct(by_round[k]) if k in by_round else "" for k in numbers]
        latency = s.get("latency_a_ms")
        row = [
            _cell((s.get("test") or "").rsplit("::", 1)[-1]),
            _cell(s["dtype"]),
            _cell(s["shape"] + (f" #{s['occurrence'] + 1}" if s.get("occurrence") else "")),
            _cell("" if latency is None else f"{latency:.5f}", True),
            *(_cell(d, True) for d in deltas),
            _cell(_pct(s.get("median_pct")), True),
            _cell(_pct(s.get("baseline_median_pct")), True),
            _cell(_pct(s.get("corrected_median_pct")), True),
            _cell("" if s.get("noise_pct") is None else f"{s['noise_pct']:.3f}", True),
            _cell("yes" if s.get("beyond_noise") else ""),
        ]
        out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</table>")
    if len(shapes) < len(every):
        link = f"{entry['op']}/{AB_FILE}"
        out.append(
            f'<p class="muted">{len(shapes)} of {len(every)} shapes shown (those beyond noise, '
            f'then the largest medians): every shape is in <a href="{escape(link)}">'
            f"{escape(link)}</a></p>"
        )
    return out


def detailed(doc: Mapping[str, Any]) -> set[str]:
    """The operators shown whole on the page: those beyond noise first, then the others in
    the table's order, :data:`DETAILED` in all; the largest effects first."""
    entries = list(doc.get("operators", ()))
    found = [str(e["op"]) for e in _moved(entries)]
    rest = [str(e["op"]) for e in entries if str(e["op"]) not in set(found)]
    return set((found + rest)[:DETAILED])


def _moved(entries: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The operators beyond noise, the largest effect first."""
    moved = [e for e in entries if classify(e) in (SLOWER, FASTER, MIXED)]
    return sorted(moved, key=lambda e: -abs(float(e.get("effect_pct") or 0.0)))


def _liveness(doc: Mapping[str, Any]) -> list[str]:
    """The line on whether the switch was live (``core.liveness``), where the result has one."""
    live = doc.get("liveness")
    line = live.get("line") if isinstance(live, Mapping) else None
    return [f'<p class="liveness"><strong>{escape(str(line))}</strong></p>'] if line else []


def html(
    doc: Mapping[str, Any], overview: str | None = None, pictures: Mapping[str, str] | None = None
) -> str:
    """The page. ``overview`` and ``pictures`` (op -> ``delta.svg`` text) are SVG files'
    text; without them the page says that no picture was drawn."""
    pictures = pictures or {}
    title = f"zlbench {doc.get('kind', 'screen')}: {_switch_text(doc)}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="headline">{escape(headline(doc))}</p>',
        f'<p class="muted">{escape(str(doc.get("sign", "")))}; {escape(str(doc.get("units", "")))}'
        f"; status {escape(str(doc.get('status', '')))}, schema_version "
        f"{escape(str(doc.get('schema_version', '')))}</p>",
    ]
    counts = doc.get("counts") or {}
    out.append(
        '<p class="muted">operators: '
        + escape(", ".join(f"{n} {s}" for s, n in counts.items() if n))
        + '; every column is defined under <a href="#columns">Columns</a></p>'
    )
    caliber = doc.get("caliber") or {}
    if caliber:
        out.append(
            '<p class="muted">caliber: '
            + escape(" ".join(f"{k}={caliber.get(k, '')}" for k in CALIBER_FIELDS))
            + "</p>"
        )
    floor = doc.get("noise_floor") or {}
    if floor:
        out.append(f'<p class="muted">noise floor: {escape(str(floor.get("text", "")))}</p>')
    out += _liveness(doc)
    out.append("<h2>Operators</h2>")
    out += _operators_table(doc)
    out.append("<h2>Overview</h2>")
    out.append(_svg(overview) if overview else '<p class="muted">no overview picture</p>')
    whole = detailed(doc)
    if len(whole) < len(doc.get("operators", ())):
        out.append(
            f'<p class="muted">{len(whole)} operators are shown whole below (those beyond '
            "noise first); the others link to their per-shape numbers beside this page, and "
            "to their picture where one was drawn (<code>zlbench plot</code> draws every one)."
            "</p>"
        )
    for entry in doc.get("operators", ()):
        op = str(entry["op"])
        out.append(f'<h2 id="op-{escape(op)}">{escape(op)}</h2>')
        line = ScreenLine.from_entry(entry)
        out.append(f"<p>{escape(line.shown_verdict)} {escape(line.range)}</p>")
        notes = entry.get("notes") or ()
        if notes:
            out.append("<ul>" + "".join(f"<li>{escape(str(n))}</li>" for n in notes) + "</ul>")
        if op not in whole:
            links = [f"{op}/{PLOT_FILE}"] if op in pictures else []
            links.append(f"{op}/{AB_FILE}")
            out.append(
                '<p class="muted">'
                + ", ".join(f'<a href="{escape(h)}">{escape(h)}</a>' for h in links)
                + "</p>"
            )
            continue
        if op in pictures:
            out.append(_svg(pictures[op]))
        out += _shapes_table(entry)
    out += _columns()
    out.append("</body></html>")
    return "\n".join(out) + "\n"
