"""``benchmarks/gpu_validate.py run``'s cost, scale and cards stages, run in this process against
a stand-in Python (``PYTHON``) that records each command and makes each ``--zl-out`` folder: which
test functions they screen, how ``COST_RESUME=1`` continues a cut run, and how the cards stage
compares one card with all."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from zl_testing import load_benchmark

gpu_validate = load_benchmark("gpu_validate")

STUB = """#!/usr/bin/env bash
# a stand-in python: -c prints what the script asks of torch and the plugin; -m pytest records
# its arguments and makes its --zl-out folder (a complete run, and a screen's result, when
# STUB_COMPLETE=1); STUB_CALLS.cards gets each call's CUDA_VISIBLE_DEVICES, STUB_CALLS.order its
# CUDA_DEVICE_ORDER; with STUB_SLEEP a pytest call lasts that long, its start and end in .times
echo "$*" >> "$STUB_CALLS"
echo "${CUDA_VISIBLE_DEVICES-all} $*" >> "$STUB_CALLS.cards"
echo "${CUDA_DEVICE_ORDER-unset} $*" >> "$STUB_CALLS.order"
if [ "$1" = -c ]; then
  case "$2" in
    *SHAPES_DIR*) echo /x/smoke.yaml ;; *device_count*) echo "${STUB_CARDS:-1}" ;; *) echo stub ;;
  esac
  exit 0
fi
for a in "$@"; do
  case "$a" in --zl-out=*) d=${a#--zl-out=}; mkdir -p "$d"
    [ "${STUB_COMPLETE:-0}" = 1 ] && touch "$d/.complete" "$d/screen_result.json" ;; esac
done
if [ -n "${STUB_SLEEP:-}" ]; then
  start=$(date +%s.%N); sleep "$STUB_SLEEP"
  for a in "$@"; do
    case "$a" in --zl-out=*) echo "${a##*/} $start $(date +%s.%N)" >> "$STUB_CALLS.times" ;; esac
  done
fi
echo "1 passed"
exit "${STUB_RC:-0}"
"""


def run_cost(tmp_path: Path, stage: str = "cost", **env: str) -> list[list[str]]:
    """``stage`` into ``tmp_path/V``; the pytest commands it ran, as argument lists."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    stub = tmp_path / "py"
    stub.write_text(STUB)
    stub.chmod(0o755)
    checkout = tmp_path / "fg"
    (checkout / "benchmark").mkdir(parents=True, exist_ok=True)
    (checkout / "pytest.ini").touch()
    calls = tmp_path / "calls.txt"
    calls.unlink(missing_ok=True)
    for kind in ("cards", "order", "times"):
        Path(f"{calls}.{kind}").unlink(missing_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        for name in KNOBS:
            patch.delenv(name, raising=False)
        for name, value in {"PYTHON": str(stub), "STUB_CALLS": str(calls), **env}.items():
            patch.setenv(name, value)
        patch.chdir(checkout)
        assert gpu_validate.main(["run", "-o", str(tmp_path / "V"), stage]) == 0
    if not calls.exists():
        return []
    lines = calls.read_text().splitlines()
    return [line.split() for line in lines if line.startswith("-m pytest benchmark/")]


#: the environment variables that shape the stages, unset around each call
KNOBS = (
    "DTYPES", "OWN_DTYPES", "SCREEN_MODES", "ZL_TIMER", "SHARED_INPUTS", "SCREEN_ARGS",
    "RUN_TIMEOUT", "DEADLINE", "AB_OPS", "COST_OPS", "COST_SCREENS", "COST_SEED", "COST_RESUME",
    "PROCESS_OPS", "MODE_CARDS", "SCALE_OPS", "SCALE_N", "SCALE_BATCH", "SCALE_RESUME",
    "CARDS_OPS", "CARDS_BATCH", "CARDS_RUNS", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
)  # fmt: skip


def out_of(args: list[str]) -> str:
    return next(a for a in args if a.startswith("--zl-out=")).rsplit("/", 1)[-1]


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_the_cost_stage_screens_all_its_default_functions(tmp_path: Path) -> None:
    """The default list spans several lines: every one of its 30 functions is screened (fft on
    its own dtypes, apart, under DTYPES)."""
    runs = run_cost(tmp_path, DTYPES="float16", SCREEN_MODES="one-process", COST_SCREENS="aa")
    assert [out_of(r) for r in runs] == ["seed", "aa_one-process", "aa_one-process_own"]
    seed, screen, own = runs
    functions = [a for a in screen if a.startswith("benchmark/")]
    assert len(functions) == 29
    assert "benchmark/test_sin.py::test_sin" in functions
    assert [a for a in seed if a.startswith("benchmark/")] == functions
    assert [a for a in own if a.startswith("benchmark/")] == [
        "benchmark/test_fft.py::test_perf_fft"
    ]
    assert "--zl-resume" not in screen


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_cost_resume_continues_the_cut_screens_and_keeps_their_logs(tmp_path: Path) -> None:
    env = {"DTYPES": "float16", "SCREEN_MODES": "one-process", "COST_SCREENS": "aa"}
    run_cost(tmp_path, STUB_COMPLETE="1", **env)
    runs = run_cost(tmp_path, COST_RESUME="1", **env)
    assert [out_of(r) for r in runs] == ["aa_one-process", "aa_one-process_own"]  # seed kept
    assert all("--zl-resume" in r for r in runs)
    logs = sorted(p.name for p in (tmp_path / "V" / "cost").glob("aa_one-process.*log"))
    assert len(logs) == 2  # the cut run's log beside the resumed one's
    # without COST_RESUME an existing stage folder is refused
    assert run_cost(tmp_path, **env) == []


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_scale_resume_continues_only_a_screen_that_holds_something(tmp_path: Path) -> None:
    """A scale screen cut before its root held anything (the claim rolled it back) is started
    afresh: --zl-resume refuses a root that holds no screen."""
    scale = tmp_path / "V" / "scale"
    scale.mkdir(parents=True)
    (scale / "functions.txt").write_text("benchmark/test_abs.py::test_abs\n")
    (runs,) = run_cost(tmp_path, "scale", SCALE_RESUME="1")
    assert "--zl-resume" not in runs
    (runs,) = run_cost(tmp_path, "scale", SCALE_RESUME="1")  # the stub made the root
    assert "--zl-resume" in runs


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_a_run_with_less_than_20_s_left_of_the_deadline_is_not_started(tmp_path: Path) -> None:
    """DEADLINE bounds a lent machine's one command: no run starts that could not finish."""
    env = {"DTYPES": "float16", "SCREEN_MODES": "one-process", "COST_SCREENS": "aa"}
    assert run_cost(tmp_path / "past", DEADLINE=str(int(time.time()) + 5), **env) == []
    log = (tmp_path / "past" / "V" / "validate.log").read_text()
    assert "seed: not started (DEADLINE)" in log
    runs = run_cost(tmp_path / "ahead", DEADLINE=str(int(time.time()) + 600), **env)
    assert [out_of(r) for r in runs] == ["seed", "aa_one-process", "aa_one-process_own"]


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_the_cards_stage_runs_one_card_then_all_on_the_cache_of_the_first(tmp_path: Path) -> None:
    """The same functions on card 0 alone, then over both cards under xdist; both keep pytest's
    cache in one folder (the second splits the operators by the costs the first recorded)."""
    functions = tmp_path / "F"
    functions.write_text("benchmark/test_abs.py::test_abs\nbenchmark/test_mul.py::test_mul\n")
    runs = run_cost(tmp_path, "cards", CARDS_OPS=str(functions), STUB_CARDS="2")
    assert [out_of(r) for r in runs] == ["one", "all"]
    one, both = runs
    for args in runs:
        assert [a for a in args if a.startswith("benchmark/")] == [
            "benchmark/test_abs.py::test_abs",
            "benchmark/test_mul.py::test_mul",
        ]
        assert "no:cacheprovider" not in args
        assert f"cache_dir={tmp_path}/V/cards/cache" in args
        assert "--zl-ab=RLC_ENHANCE=1" in args
    assert "--zl-devices=0" in one
    assert "-n" not in one
    assert both[both.index("-n") + 1] == "2"
    assert "--zl-devices=0,1" in both
    log = (tmp_path / "V" / "validate.log").read_text()
    assert re.search(r"cards: one card \d+ s, 2 cards \d+ s: x", log)  # the ratio
    # the two runs as two calls into one folder; a run whose folder exists is refused
    env = {"CARDS_OPS": str(functions), "STUB_CARDS": "2"}
    split = tmp_path / "split"
    assert [out_of(r) for r in run_cost(split, "cards", CARDS_RUNS="one", **env)] == ["one"]
    assert [out_of(r) for r in run_cost(split, "cards", CARDS_RUNS="all", **env)] == ["all"]
    assert run_cost(split, "cards", CARDS_RUNS="all", **env) == []
    # a run cut by its limit (or failed) gives no wall time to compare
    cut = tmp_path / "cut"
    run_cost(cut, "cards", CARDS_RUNS="one", **env)
    run_cost(cut, "cards", CARDS_RUNS="all", STUB_RC="124", **env)
    cut_log = (cut / "V" / "validate.log").read_text()
    assert "cards/all: rc=124" in cut_log
    assert " s: x" not in cut_log  # no ratio
    # one card has no second run
    assert run_cost(tmp_path / "single", "cards", CARDS_OPS=str(functions), CARDS_RUNS="all") == []


def cards_of(tmp_path: Path) -> dict[str, str]:
    """The cards (``CUDA_VISIBLE_DEVICES``) each screen of the last ``run_cost`` ran on."""
    lines = (tmp_path / "calls.txt.cards").read_text().splitlines()
    return {
        out_of(line.split()): line.split()[0] for line in lines if " -m pytest benchmark/" in line
    }


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_mode_cards_runs_each_mode_at_once_on_cards_of_its_own_then_one_table(
    tmp_path: Path,
) -> None:
    """All modes in one call of a lent machine: each on its own cards (those on their own
    dtypes on the last card of several, at the same time as the others under xdist over the
    rest), process mode on PROCESS_OPS only, and one table of every screen at the end."""
    runs = run_cost(
        tmp_path,
        DTYPES="float16",
        SCREEN_MODES="lockstep process",
        COST_SCREENS="aa",
        MODE_CARDS="lockstep=0 process=1,2,3",
        PROCESS_OPS="benchmark/test_abs.py::test_abs benchmark/test_fft.py::test_perf_fft",
        STUB_CARDS="4",
        STUB_COMPLETE="1",
        STUB_SLEEP="1",
    )
    by_name = {out_of(r): r for r in runs}
    assert sorted(by_name) == [
        "aa_lockstep", "aa_lockstep_own", "aa_process", "aa_process_own", "seed",
    ]  # fmt: skip
    assert cards_of(tmp_path) == {
        "seed": "all",
        "aa_lockstep": "0",
        "aa_lockstep_own": "0",
        "aa_process": "1,2",
        "aa_process_own": "3",  # on the last card, at once with the others
    }
    times = {}
    for line in (tmp_path / "calls.txt.times").read_text().splitlines():
        name, start, end = line.split()
        times[name] = (float(start), float(end))

    def at_once(a: str, b: str) -> bool:
        return times[a][0] < times[b][1] and times[b][0] < times[a][1]

    assert at_once("aa_lockstep", "aa_process")  # each mode on its cards, at the same time
    assert at_once("aa_process", "aa_process_own")
    assert not at_once("seed", "aa_lockstep")  # the seed first
    # CUDA_VISIBLE_DEVICES numbers the cards as nvidia-smi does only in PCI bus order
    orders = (tmp_path / "calls.txt.order").read_text().splitlines()
    screens = [o for o in orders if " -m pytest benchmark/" in o and "/cost/seed" not in o]
    assert {o.split()[0] for o in screens} == {"PCI_BUS_ID"}
    lockstep, process = by_name["aa_lockstep"], by_name["aa_process"]
    assert len([a for a in lockstep if a.startswith("benchmark/")]) == 29
    assert "-n" not in lockstep
    assert [a for a in process if a.startswith("benchmark/")] == ["benchmark/test_abs.py::test_abs"]
    assert process[process.index("-n") + 1] == "2"
    assert "--zl-devices=0,1" in process
    assert "-n" not in by_name["aa_process_own"]
    assert "--zl-screen-mode=lockstep" in by_name["aa_lockstep_own"]
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    table = next(line for line in calls if " table " in line).split(" table ")[1]
    assert [root.split("=", 1)[1] for root in table.split(f" {tmp_path}")] == [
        "aa_lockstep (cards 0)",
        "aa_lockstep_own (cards 0)",
        "aa_process (cards 1,2)",
        "aa_process_own (cards 3)",
    ]
    # resumed later without MODE_CARDS (on all cards): no label names the cards of before
    run_cost(tmp_path, DTYPES="float16", SCREEN_MODES="lockstep", COST_SCREENS="aa",
             COST_RESUME="1", STUB_CARDS="4", STUB_COMPLETE="1")  # fmt: skip
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    table = next(line for line in calls if " table " in line).split(" table ")[1]
    assert [root.split("=", 1)[1] for root in table.split(f" {tmp_path}")] == [
        "aa_lockstep",
        "aa_lockstep_own",
    ]


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
@pytest.mark.parametrize(
    ("cards", "why"),
    [
        ("lockstep=0", "cost: MODE_CARDS gives no card to mode process"),
        ("lockstep=0 process=0", "cost: MODE_CARDS: card 0 given twice"),
        ("lockstep=0 process=2", "cost: MODE_CARDS: card 2, but 2 card(s) visible"),
        ("lockstep=0 process", "cost: MODE_CARDS: 'process' is not MODE=CARD[,CARD...]"),
    ],
)
def test_mode_cards_that_do_not_fit_are_refused_before_anything_runs(
    tmp_path: Path, cards: str, why: str
) -> None:
    env = {"SCREEN_MODES": "lockstep process", "COST_SCREENS": "aa", "STUB_CARDS": "2"}
    assert run_cost(tmp_path, MODE_CARDS=cards, **env) == []
    assert why in (tmp_path / "V" / "validate.log").read_text()
    assert not (tmp_path / "V" / "cost").exists()


@pytest.mark.skipif(os.name != "posix", reason="a bash stand-in")
def test_process_ops_narrow_process_mode_alone(tmp_path: Path) -> None:
    """One mode after the other on one card: PROCESS_OPS applies to process mode, and the mode
    after it screens the whole list again."""
    runs = run_cost(
        tmp_path,
        DTYPES="float16",
        SCREEN_MODES="process lockstep",
        COST_SCREENS="aa",
        PROCESS_OPS="benchmark/test_abs.py::test_abs",
    )
    tests = {out_of(r): len([a for a in r if a.startswith("benchmark/")]) for r in runs}
    assert tests == {"seed": 29, "aa_process": 1, "aa_lockstep": 29, "aa_lockstep_own": 1}
    assert set(cards_of(tmp_path).values()) == {"all"}


def test_run_outside_a_flaggems_checkout_is_one_line_and_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert gpu_validate.main(["run", "-o", str(tmp_path / "V"), "cost"]) == 2
    err = capsys.readouterr().err
    assert err == "gpu_validate: run from a FlagGems checkout (benchmark/ and pytest.ini here)\n"
    assert not (tmp_path / "V").exists()
    with pytest.raises(SystemExit) as stop:  # argparse: an unknown stage, before anything runs
        gpu_validate.main(["run", "costs"])
    assert stop.value.code == 2
    assert "invalid choice: 'costs'" in capsys.readouterr().err


def test_a_pack_leaves_out_the_code_caches(tmp_path: Path) -> None:
    stages = gpu_validate._stages()
    kept = [
        "V/cost/aa_lockstep/abs/r1_A/rows.jsonl",
        "V/cost/aa_lockstep/abs/r1_A/triton_cache",  # the folder itself, empty
    ]
    left = ["V/seed/triton_cache/h0/k.ttgir", "V/timers/fgk1/fg_cache/config_cache/x.db"]
    for name in kept + left:
        info = stages.tarfile.TarInfo(name)
        assert (stages._packed(info) is None) == (name in left), name
