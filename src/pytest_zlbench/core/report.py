"""``report.html``: one self-contained page of a screen's result document (``core.result``):
the operators' table with ``screen.tsv``'s columns, the overview picture, and per operator its
notes, its picture and every shape's per-round deltas. Pictures are inline SVG, there is no
script and no link outside the page, so it reads offline and can be attached to a CI run."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from .records import CALIBER_FIELDS
from .screen_tsv import SHOWN, ScreenLine

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
table{border-collapse:collapse;font-size:13px;margin:.6em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.slower td{background:#fde8e8} tr.faster td{background:#e8f4fd}
.muted{color:#666;font-size:12px} svg{max-width:100%;height:auto}
"""


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
    headers = [c for c in SHOWN if c != "note"] + ["status", "stage", "note"]
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr>"]
    for entry in doc.get("operators", ()):
        line = ScreenLine.from_entry(entry)
        direction = entry.get("direction")
        css = f' class="{direction}"' if direction in ("slower", "faster") else ""
        cells = []
        for h in headers:
            if h == "note":
                cells.append(_cell(line.footnote()))
            elif h == "op":
                cells.append(f'<td><a href="#op-{escape(line.op)}">{escape(line.op)}</a></td>')
            elif h == "verdict":
                cells.append(_cell(line.shown_verdict))
            else:
                value = line.cell(h)
                cells.append(_cell(value, numeric=h not in ("verdict", "status", "stage")))
        out.append(f"<tr{css}>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return out


def _shapes_table(entry: Mapping[str, Any]) -> list[str]:
    shapes = entry.get("shapes") or ()
    if not shapes:
        return []
    # each delta under its round's number (a round that failed leaves a gap)
    numbers = sorted({r.get("round", i + 1) for s in shapes for i, r in enumerate(s["rounds"])})
    head = ["test", "dtype", "shape", "latency_a_ms"]
    head += [f"r{k}_delta_pct" for k in numbers]
    head += ["median_pct", "baseline_median_pct", "corrected_median_pct", "noise_pct", "beyond"]
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
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
    return out


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
    switch = doc.get("switch")
    what = " ".join(f"{k}={v}" for k, v in (switch or {}).items()) or (
        "none (A/A control)" if switch == {} else "—"
    )
    title = f"zlbench {doc.get('kind', 'screen')}: {what}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="muted">{escape(str(doc.get("sign", "")))}; {escape(str(doc.get("units", "")))}'
        f"; status {escape(str(doc.get('status', '')))}, schema_version "
        f"{escape(str(doc.get('schema_version', '')))}</p>",
    ]
    counts = doc.get("counts") or {}
    out.append("<p>" + escape(", ".join(f"{n} {s}" for s, n in counts.items() if n)) + "</p>")
    caliber = doc.get("caliber") or {}
    if caliber:
        out.append(
            '<p class="muted">caliber: '
            + escape(" ".join(f"{k}={caliber.get(k, '')}" for k in CALIBER_FIELDS))
            + "</p>"
        )
    floor = doc.get("noise_floor") or {}
    if floor:
        out.append(f"<p>noise floor: {escape(str(floor.get('text', '')))}</p>")
    out += _liveness(doc)
    out.append("<h2>Operators</h2>")
    out += _operators_table(doc)
    out.append("<h2>Overview</h2>")
    out.append(_svg(overview) if overview else '<p class="muted">no overview picture</p>')
    for entry in doc.get("operators", ()):
        op = str(entry["op"])
        out.append(f'<h2 id="op-{escape(op)}">{escape(op)}</h2>')
        line = ScreenLine.from_entry(entry)
        out.append(f"<p>{escape(line.shown_verdict)} {escape(line.range)}</p>")
        notes = entry.get("notes") or ()
        if notes:
            out.append("<ul>" + "".join(f"<li>{escape(str(n))}</li>" for n in notes) + "</ul>")
        if op in pictures:
            out.append(_svg(pictures[op]))
        out += _shapes_table(entry)
    out.append("</body></html>")
    return "\n".join(out) + "\n"
