"""The GPU validation of pytest-zlbench against FlagGems' benchmark suite, and the summaries of
its run directories (each usable on its own).

python benchmarks/gpu_validate.py run [-o DIR] [--seed DIR] [--pack] STAGE...
    from a FlagGems checkout on a CUDA machine: the validation stage by stage (env, seed,
    record, noise, capnoise, placement, oneproc, timers, caliber, ab, aa, refuse, aa3, mma, rlc,
    crash, cost, scale, cards, capture, xdist, kill, sample, or all); ``run --help`` lists
    each stage, its cost and the environment variables that shape it (``gpu_stages.py``)
python benchmarks/gpu_validate.py rows DIR...
    per run: rows in rows.jsonl (else in the partial-rows files of an unfinished run),
    counted by (operator, timer, the first 70 characters of the fallback reason)
python benchmarks/gpu_validate.py cards DIR...
    per run: rows counted by the card they were measured on (name and PCI bus id)
python benchmarks/gpu_validate.py devices DIR...
    per run: the identity's device, device_ids and visible_devices
python benchmarks/gpu_validate.py tuning DIR [KERNEL]
    per run: autotune keys tuned (printed in run.log under TRITON_PRINT_AUTOTUNING), keys
    pinned in autotune.json, .ttgir files in the run's Triton cache (and those of KERNEL)
python benchmarks/gpu_validate.py timers DIR...
    per run: rows counted by the timer of each latency (timer, timer_base), rows whose two
    latencies were timed differently, the fewest samples of any latency (spread.n)
python benchmarks/gpu_validate.py nodes
    on a CUDA card: the nodes a graph capture records for nothing, a view and a 64 x 64 abs
    (what the graph timer counts to refuse an empty capture)
python benchmarks/gpu_validate.py screen ROOT [WALL_S]
    one screen (its screen_result.json and progress.log, else the cost.json of each
    side-worker batch): per operator the verdict, rounds used, shapes beyond noise and its seconds;
    the median seconds per operator (WALL_S, the screen's wall time, divided by the operators
    too), the share of the side workers' wall time spent inside timed turns; over every shape
    with two rounds or more: |median over rounds of the delta| (median, worst) and the screen's
    own per-shape median (``median_pct``: each order of the rounds weighed alike), shapes
    beyond noise
python benchmarks/gpu_validate.py table ROOT[=LABEL]...
    screens side by side, one Markdown row each (LABEL, else the screen's switch or A/A): its
    mode and timer, operators measured, rounds used, wall time by its own clock (progress.log;
    every session of a resumed screen, the longest process of each), seconds per operator,
    share of the side workers' time inside timed turns, and over every shape with two rounds
    or more |median over rounds| and |balanced median| (median, worst) and the shapes beyond
    noise: the one table of screens run side by side (e.g. each mode on a card of its own)
python benchmarks/gpu_validate.py cheapest ROOT N
    the test functions of the N complete operators of screen ROOT that kept its side workers
    busy the fewest seconds (those measured on their own dtypes left out), one per line: a
    list for the cards stage's CARDS_OPS
python benchmarks/gpu_validate.py identity DIR TIMER DIRECT_REPEAT DEVICE
    writes a hand-made run_identity.json beside a plain FlagGems log (DIR/run.log), so that
    timer_noise.py and --zl-compare read FlagGems' own timers: backend cuda, --level core,
    upstream shapes, a tuner cache of its own, configs replayed
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_zlbench.core.autotune import PINS_FILE, tuned_keys
from pytest_zlbench.core.records import Row, iter_rows_jsonl, partial_files, read_json_object
from pytest_zlbench.core.screen_tsv import ScreenLine
from pytest_zlbench.core.shard import COST_FILE, cost_of
from pytest_zlbench.screen.cost import batch_totals


def rows_of(run: Path) -> tuple[str, list[Row]]:
    """The rows of a run: rows.jsonl, else the partial files of a run that did not finish."""
    complete = run / "rows.jsonl"
    files = [complete] if complete.is_file() else partial_files(run)
    rows = [r for f in files for r in iter_rows_jsonl(f.read_text(), f.name)]
    return ", ".join(f.name for f in files) or "no rows file", rows


def cmd_rows(dirs: list[str]) -> None:
    for d in dirs:
        source, rows = rows_of(Path(d))
        print(f"{d}: {len(rows)} rows ({source})")
        kinds = Counter((r.op, r.timer, (r.fallback or "")[:70]) for r in rows)
        for (op, timer, why), n in sorted(kinds.items()):
            print(f"  {n:4d} {op} {timer} {why}")


def cmd_cards(dirs: list[str]) -> None:
    for d in dirs:
        _, rows = rows_of(Path(d))
        for card, n in sorted(Counter(r.card for r in rows).items()):
            print(f"{d}: {n:4d} rows on {card or '(no card recorded)'}")


def cmd_devices(dirs: list[str]) -> None:
    for d in dirs:
        path = Path(d) / "run_identity.json"
        if not path.is_file():
            print(f"{d}: no run_identity.json")
            continue
        ident = json.loads(path.read_text())
        fields = ("device", "device_ids", "visible_devices")
        print(d, " ".join(f"{k}={ident.get(k)}" for k in fields))


def cmd_tuning(run: str, kernel: str = "") -> None:
    root = Path(run)
    log = root / "run.log"
    tuned = len(tuned_keys(log.read_text(errors="replace"))) if log.is_file() else 0
    pins = root / PINS_FILE
    keys = 0
    if pins.is_file():
        data = json.loads(pins.read_text())
        keys = sum(len(v) for v in data.get("kernels", {}).values())
    ttgir = list((root / "triton_cache").rglob("*.ttgir"))
    line = f"{run}: {tuned} keys tuned; {keys} keys in {PINS_FILE}; {len(ttgir)} .ttgir"
    if kernel:
        line += f", {sum(1 for p in ttgir if p.name == f'{kernel}.ttgir')} of {kernel}"
    print(line)


def cmd_identity(run: str, timer: str, direct_repeat: str, device: str) -> None:
    identity = {
        "backend": "cuda",
        "device": device,
        "timer": timer,
        "bench_level": "core",
        "shape_mode": "upstream",
        "tuner_cache": "isolated",
        "direct_repeat": direct_repeat,
        "autotune_mode": "replay",
    }
    (Path(run) / "run_identity.json").write_text(json.dumps(identity) + "\n")


def cmd_timers(dirs: list[str]) -> None:
    for d in dirs:
        _, rows = rows_of(Path(d))
        pairs = Counter((r.timer, r.timer_base) for r in rows)
        samples = [s.n for r in rows for s in (r.spread, r.spread_base) if s is not None]
        unlike = sum(1 for r in rows if r.timer_base and r.timer != r.timer_base)
        print(
            f"{d}: {len(rows)} rows; (timer, timer_base): "
            + ", ".join(f"{a}/{b}: {n}" for (a, b), n in sorted(pairs.items(), key=str))
            + f"; unlike timers {unlike}; fewest samples {min(samples) if samples else '-'}"
        )


def cmd_nodes() -> None:
    import torch

    from pytest_zlbench.adapters.torch_api import TorchDeviceAPI
    from pytest_zlbench.core.backends import BUILTIN_BACKENDS

    api = TorchDeviceAPI(next(b for b in BUILTIN_BACKENDS if b.name == "cuda"))
    x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    for name, fn in (("nothing", lambda: None), ("a view", lambda: x.view(-1)),
                     ("abs 64 x 64 fp16", lambda: torch.abs(x))):  # fmt: skip
        fn()
        api.synchronize()
        graph = api.new_graph()
        with api.capture(graph):
            fn()
        print(f"{name}: {api.graph_nodes(graph)} nodes")
        api.release(graph)


def _op_seconds(root: Path) -> dict[str, float]:
    """Seconds each operator kept the side workers (in process mode, its child processes)
    busy, summed over its passes: each operator's cost record (``<op>/cost.json``, the one
    ``--zl-shard-from`` reads)."""
    seconds = {}
    for path in sorted(root.glob(f"*/{COST_FILE}")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        cost = cost_of(record, path.parent.name)
        if cost is not None:
            seconds[path.parent.name] = cost
    return seconds


def cmd_cheapest(root: str, count: str) -> None:
    path = Path(root)
    seconds = _op_seconds(path)
    listed = 0
    for op in sorted(seconds, key=lambda op: (seconds[op], op)):
        if listed == int(count):
            break
        identity = path / op / "r1_A" / "run_identity.json"
        if not (path / op / "op.complete").is_file() or (path / op / "own_dtypes.txt").exists():
            continue
        nodes = json.loads(identity.read_text()).get("test_nodes") if identity.is_file() else None
        if nodes:
            print("\n".join(nodes))
            listed += 1


def _batch_totals(root: Path) -> tuple[float, float] | None:
    """The side workers' wall and timed seconds over every session of the screen (each
    batch's cost record, ``screen.cost.batch_totals``); a record that cannot be read is left
    out, with a line that says so."""
    damaged: list[str] = []
    found = batch_totals(root, damaged)
    for path in damaged:
        print(f"{path}: unreadable batch cost record, left out of the side workers' totals")
    return found


#: a progress line's stamp: ``[zlbench 12.3s]``, ``[zlbench gw1 12.3s]`` under xdist
_STAMP = re.compile(r"^\[zlbench (?:(gw\d+) )?\s*(\d+(?:\.\d+)?)s\]", re.M)


def screen_wall(progress: str) -> tuple[float, int]:
    """A screen's wall seconds by its own clock, from its progress.log text, and its sessions.
    Each process (the controller, each xdist worker) stamps its lines from its own start, and
    the file holds the lines in the order written: a session ends where any process's stamp goes
    back (``--zl-resume`` started it again); each session counts its latest stamp. (An xdist
    worker replaced inside a session would read as a new session.)"""
    wall, count = 0.0, 0
    last: dict[str, float] = {}  # each process's latest stamp in this session
    for m in _STAMP.finditer(progress):
        who, t = m[1] or "", float(m[2])
        if who in last and t < last[who]:
            wall, count, last = wall + max(last.values()), count + 1, {}
        last[who] = t
    if last:
        wall, count = wall + max(last.values()), count + 1
    return wall, count


#: the line that starts a batch of side workers: ``... operators, lockstep side workers, ...``
_SIDE_WORKERS = re.compile(r"\b(\S+) side workers, at most \d+ round")
#: a side's own process, as process mode runs every one: ``... abs r1 A: ok (3.4s)``
_SIDE_PROCESS = re.compile(r"^\[zlbench[^\]]*\] \S+ r\d+ [AB]: ", re.M)


def screen_mode(root: Path, result: dict[str, Any]) -> str:
    """A screen root's mode: screen.json names one-process only; side workers name theirs in
    progress.log (the latest session's, where a resumed screen changed mode) and in each batch's
    cost.json; a log with sides in processes of their own and no batch is process mode's."""
    mode = (result.get("settings") or {}).get("mode")
    if mode:
        return str(mode)
    log = root / "progress.log"
    text = log.read_text() if log.is_file() else ""
    found = _SIDE_WORKERS.findall(text)
    if found:
        return str(found[-1])
    for cost in sorted(root.glob(".workers/*/cost.json")):
        mode = (read_json_object(cost) or {}).get("mode")
        if mode:
            return str(mode)
    return "process" if _SIDE_PROCESS.search(text) and not batch_totals(root) else "?"


def _read_screen(root: Path) -> dict[str, Any]:
    """A screen root's screen_result.json, or a one-line exit naming what is wrong."""
    try:
        doc = json.loads((root / "screen_result.json").read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"gpu_validate.py: {root}: not a screen root ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("operators"), list):
        raise SystemExit(f"gpu_validate.py: {root}: screen_result.json lists no operators")
    return doc


Shape = tuple[float, float, str]  # |median over rounds|, |balanced median|, which shape


def _shapes(ops: list[dict[str, Any]]) -> tuple[list[tuple[Shape, str, str]], int]:
    """Every shape with two rounds or more: its |median over rounds of the delta|, the
    screen's own |per-shape median| (``median_pct``: each order of the rounds weighed alike)
    and its name, with its timer and size class; and how many of them are beyond noise."""
    out: list[tuple[Shape, str, str]] = []
    beyond = 0
    for op in ops:
        for shape in op.get("shapes") or []:
            deltas = [r["delta_pct"] for r in shape["rounds"] if r["delta_pct"] is not None]
            if len(deltas) < 2:
                continue
            beyond += bool(shape.get("beyond_noise"))
            median = abs(statistics.median(deltas))
            screen = shape.get("median_pct")
            name = " ".join(
                x for x in (op["op"], shape.get("dtype"), shape.get("shape", "[?]")) if x
            )
            size = "< 10 us" if (shape.get("latency_a_ms") or 0) < 0.010 else ">= 10 us"
            value = (median, median if screen is None else abs(screen), name)
            out.append((value, shape.get("timer") or "?", size))
    return out, beyond


def _measured(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [op for op in ops if op["status"] in ("complete", "failed", "cut")]


def cmd_screen(root: str, wall: str = "") -> None:
    path = Path(root)
    result = _read_screen(path)
    seconds = _op_seconds(path)
    ops = result["operators"]
    print(
        f"{root}: status {result['status']}, switch {result['switch'] or 'none (A/A)'}, "
        f"{len(ops)} operators, floor: {(result.get('noise_floor') or {}).get('text', '-')}"
    )
    for op in ops:
        verdict = ScreenLine.from_entry(op).shown_verdict  # as the screen's table shows it
        judged = op.get("judged")
        print(
            f"  {op['op']:<28} {verdict:<20} rounds {op.get('rounds', 0)} "
            f"beyond {op.get('beyond')}/{judged} median {op.get('median_pct')} "
            f"{seconds.get(op['op'], 0.0):6.1f}s"
        )
    shapes, beyond = _shapes(ops)
    plain = [value for value, _, _ in shapes]
    split: dict[tuple[str, str], list[Shape]] = {}  # by (timer, size class)
    for value, timer, size in shapes:
        split.setdefault((timer, size), []).append(value)
    if seconds:
        per_op = sorted(seconds.values())
        line = (
            "seconds per operator (its passes, in side workers or child processes): median "
            f"{statistics.median(per_op):.1f}"
        )
        measured = _measured(ops)
        log = path / "progress.log"
        resumed = log.is_file() and "(--zl-resume)" in log.read_text()
        if wall and measured and not resumed:  # resumed, the wall is one session's of several
            line += (
                f"; screen wall {float(wall):.0f}s / {len(measured)} operators measured"
                f" = {float(wall) / len(measured):.1f}"
            )
        print(line)
    totals = _batch_totals(path)
    if totals and totals[0] > 0:
        w, t = totals
        print(f"side workers: {w:.0f}s wall, {t:.0f}s inside timed turns ({t / w:.0%})")
    if plain:
        print(
            f"{len(plain)} shapes with 2+ rounds: |median over rounds| {_worst(plain, 0)}; "
            f"|balanced median| {_worst(plain, 1)}; beyond noise {beyond}"
        )
        for (timer, size), values in sorted(split.items()):
            a, b = ([v[i] for v in values] for i in (0, 1))
            print(
                f"  {timer} timer, rows {size}: {len(values)}, median "
                f"{statistics.median(a):.3f}% worst {max(a):.3f}%; balanced "
                f"{statistics.median(b):.3f}%, {max(b):.3f}%"
            )
    widths = _spread_widths(path)
    if widths:
        print(
            "spread inside one measurement, (p80 - p20) / p50, median over rows and rounds: "
            + ", ".join(f"{who} {statistics.median(v):.2f}% ({len(v)})" for who, v in widths)
        )
    calls = _graph_calls(path)
    if calls:
        print(
            "calls each sample averages, median (least-most) over rows and rounds: "
            + ", ".join(
                f"{who} {statistics.median(v):g} ({min(v)}-{max(v)}; {len(v)} rows)"
                for who, v in calls
            )
        )


#: the columns of ``table``
TABLE_HEAD = (
    "screen",
    "mode",
    "timer",
    "operators",
    "rounds",
    "wall",
    "wall / operator",
    "busy / operator (median)",
    "timed",
    "shapes (2+ rounds)",
    "\\|median over rounds\\|: median, worst",
    "\\|balanced median\\|: median, worst",
    "beyond noise",
)


def cmd_table(roots: list[str]) -> None:
    from tabulate import tabulate

    rows = [_table_row(*_root_label(arg)) for arg in roots]
    print(tabulate(rows, headers=TABLE_HEAD, tablefmt="github", disable_numparse=True))


def _root_label(arg: str) -> tuple[str, str]:
    """``ROOT`` or ``ROOT=LABEL``: the root is the longest folder the argument names up to an "="
    (a path may hold one: ``runs/DTYPES=fp16/aa``); the rest is the label."""
    if Path(arg).is_dir():
        return arg, ""
    cuts = [i for i, ch in enumerate(arg) if ch == "="]
    for i in reversed(cuts):  # the longest root first
        if Path(arg[:i]).is_dir():
            return arg[:i], arg[i + 1 :]
    return (arg[: cuts[0]], arg[cuts[0] + 1 :]) if cuts else (arg, "")


def _table_row(root: str, label: str) -> tuple[str, ...]:
    """One screen's row of ``table`` (its columns: ``TABLE_HEAD``)."""
    path = Path(root)
    result = _read_screen(path)
    ops = result["operators"]
    switch = result.get("switch") or {}
    log = path / "progress.log"
    wall, sessions = screen_wall(log.read_text() if log.is_file() else "")
    measured = _measured(ops)
    used = sorted(op.get("rounds") or 0 for op in measured)
    busy = sorted(_op_seconds(path).values())
    totals = _batch_totals(path)
    shapes, beyond = _shapes(ops)
    values = [value for value, _, _ in shapes]
    walls = f"{wall:.0f} s" + (f" ({sessions} sessions)" if sessions > 1 else "")
    return (
        label or " ".join(f"{k}={v}" for k, v in switch.items()) or "A/A",
        screen_mode(path, result),
        (result.get("caliber") or {}).get("timer") or "?",
        f"{len(measured)} of {len(ops)}" if len(measured) < len(ops) else str(len(ops)),
        "-" if not used else str(used[0]) if used[0] == used[-1] else f"{used[0]}-{used[-1]}",
        walls if wall else "-",
        f"{wall / len(measured):.1f} s" if wall and measured else "-",
        f"{statistics.median(busy):.1f} s" if busy else "-",
        f"{totals[1] / totals[0]:.0%}" if totals and totals[0] > 0 else "-",
        str(len(values)),
        _pair(values, 0),
        _pair(values, 1),
        str(beyond) if values else "-",
    )


def _pair(values: list[Shape], i: int) -> str:
    """The median and the worst of the ``i``-th figure of each shape, in percent."""
    if not values:
        return "-"
    return f"{statistics.median(v[i] for v in values):.3f} %, {max(v[i] for v in values):.3f} %"


def _worst(values: list[tuple[float, float, str]], i: int) -> str:
    """The median and the worst of the ``i``-th figure of each shape, the worst shape named."""
    worst = max(values, key=lambda v: v[i])
    median = statistics.median(v[i] for v in values)
    return f"median {median:.3f}% worst {worst[i]:.3f}% ({worst[2]})"


def _row_spreads(root: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every measurement's spread in every side's rows.jsonl of a screen root, with whose it
    is: FlagGems' (``spread``) or the baseline's (``spread_base``), timed in the same turns."""
    for rows in sorted(root.glob("*/r*_[AB]/rows.jsonl")):
        for line in rows.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            for key, who in (("spread", "FlagGems"), ("spread_base", "baseline")):
                if isinstance(row.get(key), dict):
                    yield who, row[key]


def _by_whom(values: Iterable[tuple[str, Any]]) -> list[tuple[str, list[Any]]]:
    """``values`` grouped as FlagGems' and the baseline's, those with none left out."""
    out: dict[str, list[Any]] = {"FlagGems": [], "baseline": []}
    for who, value in values:
        out[who].append(value)
    return [(who, v) for who, v in out.items() if v]


def _spread_widths(root: Path) -> list[tuple[str, list[float]]]:
    """The relative width, (p80 - p20) / p50 in percent, of each measurement's samples."""

    def width(sp: dict[str, Any]) -> float | None:
        qs = [sp.get(f"{q}_ms", sp.get(q)) for q in ("p20", "p50", "p80")]
        if not all(isinstance(v, int | float) for v in qs) or qs[1] <= 0:
            return None
        return (qs[2] - qs[0]) / qs[1] * 100

    return _by_whom((who, w) for who, sp in _row_spreads(root) if (w := width(sp)) is not None)


def _graph_calls(root: Path) -> list[tuple[str, list[int]]]:
    """The calls each sample of a measurement averages (a graph's calls: the spread's
    ``calls``), FlagGems' and the baseline's."""
    return _by_whom(
        (who, sp["calls"])
        for who, sp in _row_spreads(root)
        if isinstance(sp.get("calls"), int) and not isinstance(sp.get("calls"), bool)
    )


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    command, args = argv[0], argv[1:]
    if command == "run":
        return int(_stages().run(args))
    if command == "rows":
        cmd_rows(args)
    elif command == "cards":
        cmd_cards(args)
    elif command == "devices":
        cmd_devices(args)
    elif command == "tuning" and 1 <= len(args) <= 2:
        cmd_tuning(*args)
    elif command == "timers":
        cmd_timers(args)
    elif command == "nodes" and not args:
        cmd_nodes()
    elif command == "screen" and 1 <= len(args) <= 2:
        cmd_screen(*args)
    elif command == "table" and args:
        cmd_table(args)
    elif command == "cheapest" and len(args) == 2 and args[1].isdigit():
        cmd_cheapest(*args)
    elif command == "identity" and len(args) == 4:
        cmd_identity(*args)
    else:
        print(f"unknown command or arguments: {' '.join(argv)}\n{__doc__}", file=sys.stderr)
        return 2
    return 0


def _stages() -> ModuleType:
    """``gpu_stages.py`` beside this file (``benchmarks/`` is no package)."""
    spec = importlib.util.spec_from_file_location(
        "gpu_stages", Path(__file__).with_name("gpu_stages.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
