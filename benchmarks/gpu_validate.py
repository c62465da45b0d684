"""Summaries of run directories for ``benchmarks/gpu_validate.sh`` (usable on their own).

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
python benchmarks/gpu_validate.py identity DIR TIMER DIRECT_REPEAT DEVICE
    writes a hand-made run_identity.json beside a plain FlagGems log (DIR/run.log), so that
    timer_noise.py and --zl-compare read FlagGems' own timers: backend cuda, --level core,
    upstream shapes, a tuner cache of its own, configs replayed
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from pytest_zlbench.core.autotune import PINS_FILE, tuned_keys
from pytest_zlbench.core.records import Row, iter_rows_jsonl, partial_files


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


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    command, args = argv[0], argv[1:]
    if command == "rows":
        cmd_rows(args)
    elif command == "cards":
        cmd_cards(args)
    elif command == "devices":
        cmd_devices(args)
    elif command == "tuning" and 1 <= len(args) <= 2:
        cmd_tuning(*args)
    elif command == "identity" and len(args) == 4:
        cmd_identity(*args)
    else:
        print(f"unknown command or arguments: {' '.join(argv)}\n{__doc__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
