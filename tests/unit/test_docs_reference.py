"""The reference docs agree with the code: docs/USAGE.md's Options table has one row per
declared option (none missing, none invented, each default as declared where it is a plain
value), its `zlbench` table one row per subcommand, and every relative link between the
product's documents points at a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_zlbench.cli import build_parser
from pytest_zlbench.core.options import OPTIONS, Option

ROOT = Path(__file__).resolve().parents[2]
USAGE = ROOT / "docs" / "USAGE.md"
DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _option_rows() -> dict[str, list[str]]:
    """The Options table's rows by flag: ``--zl-out=DIR`` -> its cells."""
    rows = {}
    for line in _section(USAGE.read_text(encoding="utf-8"), "Options").splitlines():
        match = re.match(r"\| `(--zl-[a-z-]+)[=`]", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in line.strip("|").split(" | ")]
    return rows


def test_the_options_table_has_one_row_per_declared_option() -> None:
    documented = _option_rows()
    declared = {o.flag for o in OPTIONS}
    assert sorted(declared - documented.keys()) == [], "declared, not in docs/USAGE.md"
    assert sorted(documented.keys() - declared) == [], "in docs/USAGE.md, not declared"


@pytest.mark.parametrize(
    "option", [o for o in OPTIONS if isinstance(o.default, (int, float)) and o.default is not False]
)
def test_a_numeric_default_is_the_declared_one(option: Option) -> None:
    default = _option_rows()[option.flag][-1]
    assert re.fullmatch(r"[\d.]+", default), (option.flag, default)
    assert float(default) == float(option.default), option.flag


def test_a_switch_is_documented_as_off_by_default() -> None:
    rows = _option_rows()
    for option in OPTIONS:
        if option.action == "store_true" and option.flag != "--zl-cold-cache":
            assert rows[option.flag][-1].startswith("off"), option.flag


def test_the_zlbench_table_has_one_row_per_subcommand() -> None:
    section = _section(USAGE.read_text(encoding="utf-8"), "The `zlbench` command")
    documented = set(re.findall(r"^\| `zlbench ([a-z]+)", section, re.M))
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert documented == set(sub.choices)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # no headings in code blocks
    return {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_link_between_documents_resolves(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        missing = not path.exists()
        if missing or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_no_heading_is_given_twice(document: Path) -> None:
    text = re.sub(r"^```.*?^```", "", document.read_text(encoding="utf-8"), flags=re.S | re.M)
    headings = re.findall(r"^#{1,6} .+$", text, re.M)
    assert sorted({h for h in headings if headings.count(h) > 1}) == []
