"""``benchmarks/code_placement.py``: the order a trial times its graphs in, a row's reading
from its trials, and its refusals of bad arguments (before torch is imported)."""

from __future__ import annotations

import sys

import pytest

from zl_testing import load_benchmark

code_placement = load_benchmark("code_placement")


def test_each_rotation_times_every_load_twice_and_in_every_position_once() -> None:
    loads = ["l1", "l2", "l3"]
    order = code_placement.schedule(loads)
    assert order[:6] == ["l1", "l2", "l3", "l3", "l2", "l1"]
    assert order[6:12] == ["l2", "l3", "l1", "l1", "l3", "l2"]
    rotations = [order[i : i + 6] for i in range(0, len(order), 6)]
    assert len(rotations) == 3
    for load in loads:
        assert sorted(r[:3].index(load) for r in rotations) == [0, 1, 2]
        assert all(r.count(load) == 2 for r in rotations)


def test_a_load_s_time_reads_against_the_mean_of_the_loads() -> None:
    got = code_placement.relative({"l1": 10.0, "l2": 10.2, "l3": 9.8})
    assert got == pytest.approx({"l1": 0.0, "l2": 2.0, "l3": -2.0})


def test_a_trial_s_kernel_time_per_call_is_its_loads_mean_over_their_traces() -> None:
    # 3 loads, each traced 6 times (2 a rotation), summed readings of 6 x 0.0077 ms a call
    assert code_placement.per_call_us({"l1": 0.0462, "l2": 0.0462, "l3": 0.0462}, 3) == (
        pytest.approx(7.7)
    )


def test_a_row_reads_each_load_s_median_over_trials_and_the_widest_gap() -> None:
    trials = [
        ({"load1": 0.1, "load2": -0.5, "load3": 0.4}, 0.02, 7.70),
        ({"load1": 0.0, "load2": -0.7, "load3": 0.7}, -0.04, 7.73),
        ({"load1": 0.2, "load2": -0.6, "load3": 0.4}, 0.01, 7.72),
    ]
    got = code_placement.summary(trials)
    assert got["by_load"] == pytest.approx({"load1": 0.1, "load2": -0.6, "load3": 0.4})
    assert got["widest_gap"] == pytest.approx(1.0)
    assert got["same_load"] == pytest.approx(0.02)
    assert got["us"] == pytest.approx(7.72)
    assert got["trials"] == trials


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--loads", "1"], "--loads needs at least 2"),
        (["--only", "conv2d"], "--only 'conv2d' matches no row (rows: FlagGems fft c64 128x512"),
        (["--json", "no/such/folder/out.json"], "--json no/such/folder/out.json: no folder"),
        (["--json", "."], "--json .: is a folder"),
        (["--loads", "x"], "argument --loads: invalid int value: 'x'"),
    ],
)
def test_bad_arguments_are_one_error_line_before_torch_is_imported(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it would fail
    with pytest.raises(SystemExit) as exc:
        code_placement.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith("code_placement: ")
    assert says in line
