"""Text rendering: tables as lists of lines, TSV writing and reading. The output sink is the
caller's (terminal reporter, file), so renderers never print."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def fmt_float(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    if math.isnan(value):
        return "nan"
    return f"{value:.{digits}f}"


def fmt_pct(value: float | None, digits: int = 2) -> str:
    if value is None:
        return ""
    return f"{value * 100:+.{digits}f}%"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    from tabulate import tabulate  # ~8 ms to import: only once a table is rendered

    text = tabulate(list(rows), headers=list(headers), tablefmt="simple", disable_numparse=True)
    return text.splitlines()


def _clean(cell: object) -> str:
    text = "" if cell is None else str(cell)
    if "\t" in text or "\n" in text:
        text = text.replace("\t", " ").replace("\n", " ")
    return text


def to_tsv(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["\t".join(headers)]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"TSV row has {len(row)} cells, header has {len(headers)}")
        lines.append("\t".join(_clean(c) for c in row))
    return "\n".join(lines) + "\n"


def read_tsv(text: str, expected: Sequence[str], source: str) -> list[dict[str, str]]:
    """Parse TSV written by :func:`to_tsv`; the header must be exactly ``expected``."""
    lines = text.splitlines()
    if not lines:
        raise ValueError(f"{source}: empty")
    header = lines[0].split("\t")
    if header != list(expected):
        raise ValueError(f"{source}: unexpected header {header[:4]}... (expected {expected[0]}...)")
    out = []
    for lineno, line in enumerate(lines[1:], 2):
        if not line:
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ValueError(f"{source}:{lineno}: {len(cells)} cells, expected {len(header)}")
        out.append(dict(zip(header, cells, strict=True)))
    return out
