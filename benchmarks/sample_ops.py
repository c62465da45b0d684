"""A stratified operator sample of a FlagGems inventory (issue 5, show 2), and its report.

    python benchmarks/sample_ops.py pick INVENTORY.tsv [--per-class 3] [--min 100]
        prints the function-level node ids to run, one per line

    python benchmarks/sample_ops.py report INVENTORY.tsv --runs DIR... --junit XML...
            [--logs FUNCTION=LOG...]
        per sampled operator: rows in any DIR/rows.jsonl, else rows in the partial-rows files of
        a run killed before its end (DIR/rows.partial*.jsonl, verdict "rows-partial"), else rows
        FlagGems printed in the LOG of a run that ended before writing rows.jsonl and before
        partial rows existed (verdict "rows-in-log"; FUNCTION is
        the test function's node id, LOG its pytest output), else dismissed (ops/dismiss.yaml, its
        while_missing entries judged on this machine), else "no-benchmark" for a passing test
        that instantiates no Benchmark class, else the exact skip or failure text from the JUnit
        files (a later file's outcome for a test function replaces an earlier one's: a second
        pass re-runs failures); then the tally per unit and per operator, and per-class coverage

    python benchmarks/sample_ops.py failed INVENTORY.tsv XML
        the function ids of the sample that failed or errored in XML, one per line

The unit of the sample is (Benchmark class, op id): each class contributes up to ``per-class``
op ids (all of them when it has fewer), chosen by a hash of the op id so that the choice is
deterministic but not alphabetical; if that gives fewer than ``--min`` units, the largest classes
contribute more until it does. Every test function of a chosen unit is run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from pytest_zlbench.core.compat import DISMISS_PATH, load_dismiss
from pytest_zlbench.core.flaggems import parse_stdout
from pytest_zlbench.core.inventory import InventoryRow, parse_tsv
from pytest_zlbench.core.records import partial_files

Unit = tuple[str, str]  # (benchmark class, op id)


def function_id(node_id: str) -> str:
    """``file::test[param]`` → ``file::test`` (the static inventory writes ``[*]``)."""
    return node_id.split("[", 1)[0]


def units_of(rows: list[InventoryRow]) -> dict[Unit, list[str]]:
    units: dict[Unit, list[str]] = defaultdict(list)
    for r in rows:
        fn = function_id(r.node_id)
        unit = (r.benchmark_class or "(none)", r.op_id)
        if fn not in units[unit]:
            units[unit].append(fn)
    return units


def _rank(op: str) -> str:
    return hashlib.sha256(op.encode()).hexdigest()


def pick(units: dict[Unit, list[str]], per_class: int, minimum: int) -> list[Unit]:
    by_class: dict[str, list[str]] = defaultdict(list)
    for cls, op in units:
        by_class[cls].append(op)
    for ops in by_class.values():
        ops.sort(key=_rank)
    chosen = [(cls, op) for cls in sorted(by_class) for op in by_class[cls][:per_class]]
    extra = per_class
    while len(chosen) < minimum and any(len(v) > extra for v in by_class.values()):
        for cls in sorted(by_class, key=lambda c: (-len(by_class[c]), c)):
            if len(by_class[cls]) > extra and len(chosen) < minimum:
                chosen.append((cls, by_class[cls][extra]))
        extra += 1
    return sorted(chosen)


def junit_outcomes(path: Path) -> dict[str, list[tuple[str, str]]]:
    """function id → [(outcome, message)] for every test case of the JUnit file."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        # pytest writes classname "benchmark.test_abs" (file as dots, plus any class) and name
        # "test_abs[params]"; rebuild the function id the inventory uses
        parts = classname.split(".")
        cls_parts = [p for p in parts if p[:1].isupper()]
        file_parts = [p for p in parts if not p[:1].isupper()]
        fn = "/".join(file_parts) + ".py::" + "::".join([*cls_parts, function_id(name)])
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = tag
                message = (el.get("message") or el.text or "").strip()
                break
        out[fn].append((outcome, message))
    return out


def first_line(text: str) -> str:
    text = re.sub(r"^\S+:\d+: ", "", text.strip())  # "file.py:12: reason" from skips
    return text.splitlines()[0][:200] if text else ""


def report(argv: argparse.Namespace) -> int:
    rows_inv = parse_tsv(Path(argv.inventory).read_text())
    units = units_of(rows_inv)
    chosen = pick(units, argv.per_class, argv.min)
    ok_by_fn: dict[str, int] = defaultdict(int)
    partial_by_fn: dict[str, int] = defaultdict(int)
    for run_dir in argv.runs:
        path = Path(run_dir) / "rows.jsonl"
        if path.is_file():
            files, into = [path], ok_by_fn
        else:  # a pass cut short writes no rows.jsonl; a killed one leaves its partial rows
            files, into = partial_files(run_dir), partial_by_fn
        for each in files:
            for line in each.open(errors="replace"):
                try:
                    r = json.loads(line)
                except ValueError:  # the last line, cut off by the kill
                    continue
                if r.get("status") == "ok" and (r.get("latency") or 0) > 0:
                    into[function_id(r.get("node", ""))] += 1
    in_log: dict[str, list[str]] = defaultdict(list)  # function id -> op of each ok row
    for spec in argv.logs:
        fn, sep, log = spec.partition("=")
        if not sep or "::" not in fn:
            raise SystemExit(f"--logs {spec!r}: expected FUNCTION=LOG, FUNCTION a node id")
        try:
            logged_rows = parse_stdout(Path(log).read_text(errors="replace"), log)
        except (OSError, ValueError) as exc:  # a table cut off mid-row by the kill, say
            print(f"# --logs {log}: not read ({str(exc).splitlines()[0]})", file=sys.stderr)
            continue
        for r in logged_rows:
            if r.status == "ok" and (r.latency or 0) > 0:
                in_log[function_id(fn)].append(r.op)
    outcomes: dict[str, list[tuple[str, str]]] = {}
    for xml in argv.junit:
        if Path(xml).is_file():
            outcomes.update(junit_outcomes(Path(xml)))  # a later pass replaces an earlier one
    dismissed = load_dismiss(DISMISS_PATH.read_text())
    per_class: dict[str, list[str]] = defaultdict(list)
    tally: dict[str, int] = defaultdict(int)
    verdicts: list[str] = []
    print("class\top\tverdict\trows\tdetail")
    for cls, op in chosen:
        fns = units[(cls, op)]
        n = sum(ok_by_fn.get(fn, 0) for fn in fns)
        seen = [o for fn in fns for o in outcomes.get(fn, [])]
        logged = sum(1 for fn in fns for row_op in in_log.get(fn, []) if row_op == op)
        partial = sum(partial_by_fn.get(fn, 0) for fn in fns)
        if n > 0:
            verdict, detail = "rows", ""
        elif partial > 0:
            verdict, detail = "rows-partial", "the run was killed; rows in rows.partial*.jsonl"
            n = partial
        elif logged > 0:
            verdict, detail = "rows-in-log", "the run ended before writing rows.jsonl"
            n = logged
        elif op in dismissed:
            verdict, detail = "dismissed", dismissed[op]
        elif not seen:
            verdict, detail = "not-run", "no test case in the JUnit files"
        elif cls == "(none)" and all(o[0] == "passed" for o in seen):
            verdict, detail = "no-benchmark", "passed without a Benchmark class: not a timing test"
        else:
            bad = [o for o in seen if o[0] != "passed"] or seen
            verdict, detail = bad[0][0], first_line(bad[0][1])
        tally[verdict] += 1
        verdicts.append(verdict)
        per_class[cls].append(verdict)
        print(f"{cls}\t{op}\t{verdict}\t{n}\t{detail}")
    classes = {cls for cls, _ in units}
    size = {c: sum(1 for u in units if u[0] == c) for c in classes}
    short = [c for c in sorted(classes) if len(per_class[c]) < min(argv.per_class, size[c])]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
    print(f"# units {len(chosen)}; classes {len(classes)}; {counts}")
    # the criterion is per operator: an op id whose unit of one class was skipped (a vLLM-only
    # variant) still counts as producing rows when a unit of another class did
    by_op: dict[str, set[str]] = defaultdict(set)
    for (_, op), verdict in zip(chosen, verdicts, strict=True):
        by_op[op].add(verdict)
    op_tally: dict[str, int] = defaultdict(int)
    open_ops: list[str] = []
    for op, seen_verdicts in sorted(by_op.items()):
        best = next(
            (
                v
                for v in ("rows", "rows-partial", "rows-in-log", "dismissed", "no-benchmark")
                if v in seen_verdicts
            ),
            "",
        )
        op_tally[best or "other"] += 1
        if not best:
            open_ops.append(f"{op} ({'/'.join(sorted(seen_verdicts))})")
    op_counts = ", ".join(f"{k} {v}" for k, v in sorted(op_tally.items()))
    neither = ", ".join(open_ops) or "none"
    print(f"# operators {len(by_op)}: {op_counts}; neither rows nor dismissed: {neither}")
    print(f"# classes with fewer units than min(3, size): {short or 'none'}")
    return 0


def main(args: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pick")
    a.add_argument("inventory")
    b = sub.add_parser("report")
    b.add_argument("inventory")
    b.add_argument("--runs", nargs="+", required=True)
    b.add_argument("--junit", nargs="+", required=True)
    b.add_argument("--logs", nargs="*", default=[])
    c = sub.add_parser("failed")
    c.add_argument("inventory")
    c.add_argument("junit")
    for s in (a, b, c):
        s.add_argument("--per-class", type=int, default=3)
        s.add_argument("--min", type=int, default=100)
    ns = p.parse_args(args)
    if ns.cmd == "pick":
        units = units_of(parse_tsv(Path(ns.inventory).read_text()))
        chosen = pick(units, ns.per_class, ns.min)
        fns = sorted({fn for u in chosen for fn in units[u]})
        print("\n".join(fns))
        print(f"# {len(chosen)} units, {len(fns)} test functions", file=sys.stderr)
        return 0
    if ns.cmd == "failed":
        units = units_of(parse_tsv(Path(ns.inventory).read_text()))
        sampled = {fn for u in pick(units, ns.per_class, ns.min) for fn in units[u]}
        outcomes = junit_outcomes(Path(ns.junit))
        bad = {
            fn for fn, seen in outcomes.items() if any(o in ("failure", "error") for o, _ in seen)
        }
        print("\n".join(sorted(bad & sampled)))
        return 0
    return report(ns)


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:  # its reader stopped early (``head``): what it left is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    raise SystemExit(status)
