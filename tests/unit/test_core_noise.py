"""core.noise: which shapes of a screen changed beyond the noise measured in the same screen.

Every number here is synthetic and fixed (seeded): no timing.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence

import pytest

from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.judge import control_root_floor, judge_screen, noise_floor
from pytest_zlbench.core.noise import (
    EAGER_KERNEL,
    FLOOR_QUANTILE,
    MIN_SAMPLES,
    NO_FLOOR,
    SIZE_CLASSES,
    size_class,
    timer_group,
)
from pytest_zlbench.core.pairing import Pair
from pytest_zlbench.core.records import Row, Spread
from pytest_zlbench.core.screening import (
    IR_CHANGED,
    NO_IR_DIFF,
    NO_TRITON,
    OpResult,
    RoundInput,
    aggregate,
    read_screen,
    render_screen,
    write_screen,
)
from zl_testing import H200_IDENTITY

IDENTITY = H200_IDENTITY.replace(direct_repeat="n/a")

#: shape -> (side A latency in ms, per-round delta B/A - 1)
Shapes = Mapping[str, tuple[float, Sequence[float]]]


def report(digest: str) -> IrReport:
    entry = IrEntry(f"h/{digest}/k.ttgir", "k", digest, "stripped", 0)
    return IrReport(entries=(entry,), method="stripped")


def op_rounds(
    op: str,
    shapes: Shapes,
    *,
    ir_b: str = "same",
    switch: Mapping[str, str] | None = None,
    timer: str = "graph",
) -> list[RoundInput]:
    """The rounds of one operator whose side-B latencies are side A's times (1 + delta)."""
    switch = {"X": "1"} if switch is None else switch
    n = len(next(iter(shapes.values()))[1])
    out = []
    for k in range(1, n + 1):
        rows_a = [Row(op, "float16", s, lat, timer=timer) for s, (lat, _) in shapes.items()]
        rows_b = [
            Row(op, "float16", s, lat * (1 + d[k - 1]), timer=timer)
            for s, (lat, d) in shapes.items()
        ]
        info = {"round": k}
        out.append(
            RoundInput(
                round=k,
                order="AB" if k % 2 else "BA",
                rows_a=rows_a,
                rows_b=rows_b,
                ir_a=report("same"),
                ir_b=report(ir_b),
                identity_a=IDENTITY.replace(info={**info, "side": "A", "switch": {}}),
                identity_b=IDENTITY.replace(info={**info, "side": "B", "switch": dict(switch)}),
            )
        )
    return out


def synthetic_aa(seed: int, shapes: int = 40, rounds: int = 3) -> Shapes:
    """A/A data of realistic spread: each shape has its own per-round noise of 0.1-1 % (normal),
    and the shapes spread over the three size classes."""
    rng = random.Random(seed)
    latencies = (0.004, 0.03, 0.25)  # ms: one per size class
    out = {}
    for i in range(shapes):
        sigma = rng.uniform(0.001, 0.01)
        out[f"[{i}]"] = (latencies[i % 3], [rng.gauss(0.0, sigma) for _ in range(rounds)])
    return out


def beyond(result: OpResult) -> list[str]:
    return [s.key[2] for s in result.shapes if s.beyond_noise]


# -- size classes ------------------------------------------------------------------------------


def test_size_classes_split_at_10_and_100_us() -> None:
    assert [c.name for c in SIZE_CLASSES] == ["< 10 µs", "10–100 µs", "≥ 100 µs"]
    assert size_class(0.0099).name == "< 10 µs"
    assert size_class(0.010).name == "10–100 µs"
    assert size_class(0.0999).name == "10–100 µs"
    assert size_class(0.1).name == "≥ 100 µs"
    assert size_class(None) is None


# -- finding: nothing decided whether a delta was beyond noise ---------------------------------


def mma_v3_screen() -> list[OpResult]:
    """DISABLE_MMA_V3=1 on the H200 (issue 15): mm's IR changed; mm_self_transpose [257, 96]
    read +0.41 % and +0.89 % in its two rounds. abs and mul are NO_IR_DIFF (their later rounds
    skipped), and their one round each is the screen's own noise."""
    mm = op_rounds(
        "mm",
        {
            "[257, 96]": (0.012, (0.0041, 0.0089)),
            "[1024, 1024]": (0.031, (0.121, 0.118)),
            "[4096, 4096]": (0.21, (0.7829, 0.7790)),
        },
        ir_b="other",
    )
    rng = random.Random(15)
    quiet = {f"[{i}]": (0.02 + 0.001 * i, (rng.gauss(0.0, 0.005),)) for i in range(24)}
    return [
        aggregate("mm", mm),
        aggregate("mul", op_rounds("mul", quiet)),
        aggregate("abs", op_rounds("abs", {"[64, 64]": (0.15, (0.012,))})),
    ]


def test_a_small_delta_inside_the_screens_noise_is_not_beyond_it() -> None:
    mm, mul, abs_ = judge_screen(mma_v3_screen())
    assert (mm.verdict, mul.verdict, abs_.verdict) == (IR_CHANGED, NO_IR_DIFF, NO_IR_DIFF)
    floor = mm.floor
    assert floor is not None
    assert floor.source == "NO_IR_DIFF operators"
    assert floor.ops == ("abs", "mul")
    small = next(s for s in mm.shapes if s.key[2] == "[257, 96]")
    # its own rounds agree in sign and their spread (0.48 %) is below its median (0.65 %):
    # only the floor of its size class, measured in the same screen, says it is noise
    assert small.round_spread < abs(small.median)
    assert small.noise is not None
    assert small.noise > abs(small.median)
    assert beyond(mm) == ["[1024, 1024]", "[4096, 4096]"]
    assert (mm.slower, mm.faster) == (2, 0)
    assert mm.effect == pytest.approx((0.1195 + 0.78095) / 2)
    line = mm.to_line()
    assert (line.beyond, line.judged) == ("2", "3")
    assert (line.slower, line.faster) == ("2", "0")
    assert line.effect_pct == f"{mm.effect * 100:+.3f}"
    assert line.floor.startswith("NO_IR_DIFF operators (abs, mul)")
    assert "2 of 3 shapes beyond noise: 2 slower, 0 faster" in line.note
    data = mm.to_json()
    assert (data["beyond"], data["judged"], data["direction"]) == (2, 3, "slower")
    assert data["effect_pct"] == pytest.approx(mm.effect * 100)
    assert data["floor"]["source"] == "NO_IR_DIFF operators"
    by_shape = {s["shape"]: s for s in data["shapes"]}
    assert by_shape["[257, 96]"]["beyond_noise"] is False
    assert by_shape["[257, 96]"]["size_class"] == "10–100 µs"


def test_an_aa_control_gives_the_floor_to_a_switched_screen() -> None:
    control = [aggregate("mul", op_rounds("mul", synthetic_aa(3), switch={}))]
    assert control[0].control
    floor = noise_floor(control)
    assert floor.source == "A/A control"
    mm, _, _ = mma_v3_screen()
    judged = judge_screen([mm], floor)[0]
    assert judged.floor == floor
    assert beyond(judged) == ["[1024, 1024]", "[4096, 4096]"]


def test_a_separate_control_s_floor_names_its_root() -> None:
    control = [aggregate("mul", op_rounds("mul", synthetic_aa(3), switch={}))]
    floor = control_root_floor(control, "/runs/aa")
    assert (floor.source, floor.root, floor.ops) == ("separate A/A control", "/runs/aa", ("mul",))
    assert floor.classes == noise_floor(control).classes
    assert floor.describe().startswith("separate A/A control /runs/aa (mul): p95 ")
    assert floor.to_json()["root"] == "/runs/aa"
    assert noise_floor(control).to_json()["root"] is None
    mm, _, _ = mma_v3_screen()
    assert judge_screen([mm], floor)[0].to_json()["floor"]["root"] == "/runs/aa"


def test_a_switched_screen_or_one_that_measured_nothing_gives_no_control_floor() -> None:
    mm, _, _ = mma_v3_screen()
    with pytest.raises(ValueError, match=r"^not an A/A control \(.*: mm\)$"):
        control_root_floor([mm], "/runs/ab")
    failed = aggregate("mul", [RoundInput(round=1, order="AB", failed="A: crashed")])
    with pytest.raises(ValueError, match=r"^no operator with a measured round"):
        control_root_floor([failed], "/runs/aa")


def test_ir_changed_without_an_effect_says_so_with_its_noise() -> None:
    mm = op_rounds("mm", {"[257, 96]": (0.012, (0.0041, 0.0089))}, ir_b="other")
    rng = random.Random(1)
    quiet = {f"[{i}]": (0.02, (rng.gauss(0.0, 0.005),)) for i in range(30)}
    result, _ = judge_screen([aggregate("mm", mm), aggregate("mul", op_rounds("mul", quiet))])
    assert result.verdict == IR_CHANGED
    assert not beyond(result)
    (shape,) = result.shapes
    assert shape.noise is not None
    note = f"IR changed, no effect beyond noise (± {shape.noise * 100:.2f} %)"
    assert note in result.all_notes
    assert (result.to_line().beyond, result.to_line().judged) == ("0", "1")


# -- the floor: per-round deltas, per size class, a named source -------------------------------


def test_the_floor_is_a_high_quantile_of_per_round_deltas_not_of_medians() -> None:
    # one shape per round pattern: medians are all 0, the per-round deltas reach 2 %
    shapes = {f"[{i}]": (0.02, (0.02, -0.02, 0.0)) for i in range(MIN_SAMPLES)}
    floor = noise_floor([aggregate("mul", op_rounds("mul", shapes, switch={}))])
    cls = floor.for_latency(0.02)
    assert cls is not None
    assert cls.value == pytest.approx(0.02)
    assert cls.samples == 3 * MIN_SAMPLES
    assert FLOOR_QUANTILE == 0.95


def test_a_class_with_too_few_samples_pools_with_the_next_or_says_too_few() -> None:
    shapes = {f"[{i}]": (0.02, (0.001 * (i + 1),)) for i in range(MIN_SAMPLES)}
    shapes["[small]"] = (0.004, (0.05,))
    floor = noise_floor([aggregate("mul", op_rounds("mul", shapes, switch={}))])
    small = floor.for_latency(0.004)
    assert small is not None
    assert small.pooled_with == "10–100 µs"
    assert small.samples == MIN_SAMPLES + 1  # its own sample is kept
    big = floor.for_latency(0.5)
    assert big is not None
    assert big.pooled_with == "10–100 µs"
    lonely = noise_floor([aggregate("mul", op_rounds("mul", {"[1]": (0.5, (0.01,))}, switch={}))])
    cls = lonely.for_latency(0.5)
    assert cls is not None
    assert cls.value is None
    assert "too few" in lonely.describe()


def test_without_a_floor_or_spreads_only_the_own_spread_applies_and_the_result_says_so() -> None:
    mm = op_rounds("mm", {"[1]": (0.02, (0.0041, 0.0089)), "[2]": (0.02, (0.01, -0.01))}, ir_b="o")
    (result,) = judge_screen([aggregate("mm", mm)])
    assert result.floor is not None
    assert result.floor.source == NO_FLOOR
    assert beyond(result) == ["[1]"]  # 0.65 % > its spread 0.48 %: all that can be said
    assert result.to_line().floor == (
        "no floor available: each shape's between-round spread, at least its measurements' width"
    )


def with_width(rounds: list[RoundInput], width: float) -> list[RoundInput]:
    """``rounds`` with every row's samples ``width`` wide: (p80 - p20) / p50."""

    def widen(rows: Sequence[Row]) -> list[Row]:
        return [
            dataclasses.replace(
                r,
                spread=Spread(
                    r.latency * (1 - width / 2), r.latency, r.latency * (1 + width / 2), 10
                ),
            )
            for r in rows
        ]

    return [dataclasses.replace(r, rows_a=widen(r.rows_a), rows_b=widen(r.rows_b)) for r in rounds]


def test_without_a_floor_a_delta_inside_one_measurements_width_is_not_beyond_noise() -> None:
    """The last resort: with no class floor, a shape is judged against its own round spread and
    at least the median width of its measurements, (p80 - p20) / p50. A two-operator A/A on the
    H200 read abs 64 x 128 x 128 (+0.003, +0.030, +0.030 %: a round spread of 0.027 %) as beyond
    noise, where one-process kernel-timed measurements are about 0.14 % wide."""
    aa = op_rounds("abs", {"[1]": (0.004, (0.00003, 0.0003, 0.0003))}, switch={})
    (quiet,) = judge_screen([aggregate("abs", with_width(aa, 0.0014))])
    assert quiet.floor is not None
    cls = quiet.floor.for_latency(0.004)
    assert cls is None or cls.value is None  # three deltas: too few for a floor
    assert beyond(quiet) == []
    assert quiet.shapes[0].noise == pytest.approx(0.0014)
    shape = quiet.to_json()["shapes"][0]  # the result file says the width it was judged by
    assert shape["width_pct"] == pytest.approx(0.14)
    assert shape["noise_pct"] == pytest.approx(0.14)
    mm = op_rounds("mm", {"[1]": (0.02, (0.15, 0.151, 0.152))}, ir_b="o")
    (changed,) = judge_screen([aggregate("mm", with_width(mm, 0.0014))])
    assert beyond(changed) == ["[1]"]  # a change far outside one measurement's width


def test_the_width_is_each_shapes_own_not_its_operators() -> None:
    """A narrow shape's steady change is not hidden by its operator's wider shapes (a
    direct-timed row can be 25 % wide, a kernel-timed one 0.1 %)."""
    shapes = {f"[{i}]": (0.02, (0.0030, 0.0031)) for i in range(3)}
    mm = op_rounds("mm", shapes, ir_b="o")
    widths = {"[0]": 0.0005, "[1]": 0.01, "[2]": 0.01}

    def widen(rows: Sequence[Row]) -> list[Row]:
        out = []
        for r in rows:
            w = widths[r.shape]
            spread = Spread(r.latency * (1 - w / 2), r.latency, r.latency * (1 + w / 2), 10)
            out.append(dataclasses.replace(r, spread=spread))
        return out

    rounds = [dataclasses.replace(r, rows_a=widen(r.rows_a), rows_b=widen(r.rows_b)) for r in mm]
    (result,) = judge_screen([aggregate("mm", rounds)])
    assert beyond(result) == ["[0]"]


def test_a_class_with_a_floor_is_judged_against_it_not_the_width() -> None:
    """The width is the last resort only: where the screen's NO_IR_DIFF operators give a floor,
    a steady change above it is beyond noise however wide one measurement is."""
    quiet = {f"[{i}]": (0.02, (0.0001 * (i % 5), -0.0001 * (i % 3))) for i in range(MIN_SAMPLES)}
    abs_ = aggregate("abs", op_rounds("abs", quiet))
    mm = aggregate(
        "mm", with_width(op_rounds("mm", {"[1]": (0.02, (0.01, 0.011))}, ir_b="o"), 0.05)
    )
    judged = {r.op: r for r in judge_screen([abs_, mm])}
    cls = judged["mm"].floor.for_latency(0.02) if judged["mm"].floor else None
    assert cls is not None
    assert cls.value is not None
    assert cls.value < 0.01
    assert beyond(judged["mm"]) == ["[1]"]
    assert judged["mm"].shapes[0].noise == pytest.approx(max(cls.value, 0.001))


def test_the_floor_source_prefers_a_control_and_ignores_changed_operators() -> None:
    changed = aggregate("mm", op_rounds("mm", {"[1]": (0.02, (0.5, 0.5))}, ir_b="other"))
    assert noise_floor([changed]).source == NO_FLOOR
    failed = aggregate(
        "mul",
        [
            *op_rounds("mul", {"[1]": (0.02, (0.01,))}),
            RoundInput(round=2, order="BA", failed="A: exit status 3"),
        ],
    )
    assert noise_floor([failed]).source == NO_FLOOR  # a failed round's numbers are not a floor


# -- an A/A control can report zero shapes beyond noise ----------------------------------------


def test_an_aa_control_reports_no_shape_beyond_noise() -> None:
    """40 shapes, 3 rounds, 0.1-1 % per-round noise: nothing changed, nothing is beyond noise."""
    (result,) = judge_screen(
        [aggregate("mul", op_rounds("mul", synthetic_aa(20261201), switch={}))]
    )
    assert result.control
    assert result.verdict == NO_IR_DIFF
    assert result.floor is not None
    assert result.floor.source == "A/A control"
    assert len(result.shapes) == 40
    assert beyond(result) == []
    assert (result.to_line().beyond, result.to_line().judged) == ("0", "40")


def test_false_positives_stay_rare_over_many_aa_screens() -> None:
    """The same over 200 seeds: a shape needs three rounds of one sign and a median above the
    95th percentile of every |per-round delta| of its class, which noise rarely gives."""
    found = 0
    for seed in range(200):
        shapes = synthetic_aa(seed)
        (result,) = judge_screen([aggregate("mul", op_rounds("mul", shapes, switch={}))])
        found += len(beyond(result))
    assert found / (200 * 40) < 0.005


def test_a_real_effect_is_found_against_the_aa_floor() -> None:
    floor = noise_floor([aggregate("mul", op_rounds("mul", synthetic_aa(5), switch={}))])
    rng = random.Random(9)
    shapes = {
        f"[{i}]": (0.03, [(0.05 if i < 10 else 0.0) + rng.gauss(0.0, 0.005) for _ in range(3)])
        for i in range(40)
    }
    (result,) = judge_screen([aggregate("mm", op_rounds("mm", shapes, ir_b="other"))], floor)
    assert beyond(result) == [f"[{i}]" for i in range(10)]
    assert result.slower == 10


# -- labels: what one round can say ------------------------------------------------------------


def test_one_round_judges_nothing_and_says_one_round() -> None:
    (result,) = judge_screen(
        [aggregate("mm", op_rounds("mm", {"[1]": (0.02, (0.5,))}, ir_b="other"))]
    )
    assert beyond(result) == []
    line = result.to_line()
    assert (line.beyond, line.judged, line.flips) == ("", "", "")  # not judged: empty cells
    assert line.rounds == "1"
    assert "IR changed, 1 round: no shape can be judged beyond noise" in line.note


def test_the_screen_shows_the_new_columns_and_reads_them_back() -> None:
    results = judge_screen(mma_v3_screen())
    lines = [r.to_line() for r in results]
    back = read_screen(write_screen(lines))
    assert [b.cells() for b in back] == [line.cells() for line in sorted(lines, key=lambda x: x.op)]
    text = "\n".join(render_screen(back))
    header = text.splitlines()[0].split()
    assert header[:4] == ["op", "verdict", "rounds", "rows"]  # screen.tsv's names
    assert {"beyond", "slower", "effect_pct", "noise_pct"} <= set(header)
    assert "noise floor: NO_IR_DIFF operators (abs, mul)" in text


def test_no_triton_shows_its_numbers() -> None:
    rounds = op_rounds("relu", {"[1]": (0.02, (0.1, 0.12)), "[2]": (0.02, (0.2, 0.22))})
    rounds = [
        RoundInput(
            round=r.round,
            order=r.order,
            rows_a=r.rows_a,
            rows_b=r.rows_b,
            ir_a=IrReport((), "stripped"),
            ir_b=IrReport((), "stripped"),
            identity_a=r.identity_a,
            identity_b=r.identity_b,
        )
        for r in rounds
    ]
    (result,) = judge_screen([aggregate("relu", rounds)])
    assert result.verdict == NO_TRITON
    line = result.to_line()
    assert line.range == "nothing compiled +11.00% ~ +21.00%"
    assert line.median_pct == "+16.000"
    assert (line.beyond, line.judged) == ("2", "2")


def test_direct_timed_rows_get_a_floor_of_their_own() -> None:
    """On an H200 smoke-shape A/A screen, FlagGems' nonzero (its capture refused: timed by the
    direct timer, L2 flushed) moved 18-118 % between processes and made the floor of every
    graph-timed row of 10 us and more 56.7 %: a switch's +10 % on such rows read as noise. The
    direct timer's rows are judged against a floor of their own."""
    rng = random.Random(7)
    graph = {f"[{i}]": (0.03, [rng.gauss(0.0, 0.003) for _ in range(3)]) for i in range(10)}
    direct = {f"[d{i}]": (0.5, [rng.choice((-1, 1)) * rng.uniform(0.2, 0.6) for _ in range(3)])
              for i in range(4)}  # fmt: skip
    control = [
        aggregate("mul", op_rounds("mul", graph, switch={})),
        aggregate("nonzero", op_rounds("nonzero", direct, switch={}, timer="direct")),
    ]
    floor = noise_floor(control)
    graph_floor = floor.for_latency(0.03, "graph")
    assert graph_floor is not None
    assert graph_floor.value is not None
    assert graph_floor.value < 0.01, floor.describe()
    assert "direct timer" in floor.describe()
    direct_floor = floor.for_latency(0.5, "direct")
    assert direct_floor is not None
    assert direct_floor.timer == "direct"
    # a switch's steady +10 % on graph-timed 30 us rows is beyond that noise
    switched = aggregate("mm", op_rounds("mm", {"[64]": (0.03, [0.10, 0.11, 0.09])}, ir_b="x"))
    (judged,) = judge_screen([switched], floor)
    assert beyond(judged) == ["[64]"]
    shape = judged.to_json()["shapes"][0]
    assert shape["timer"] == "graph"
    # and the floor says which classes are the direct timer's
    classes = floor.to_json()["classes"]
    assert {c["timer"] for c in classes} == {None, "direct"}


def test_a_short_class_falls_back_rather_than_leave_rows_without_a_floor() -> None:
    """The H200 smoke A/A had 15 graph-timed deltas of 10 us and more and 6 direct-timed ones:
    floored apart, every such row was left with its own round spread only. A class still short
    after its neighbour pools every size of its timer's group; a direct-timed class still short
    takes the floor of all rows of its size, then of every row."""
    rng = random.Random(3)
    small = {f"[s{i}]": (0.004, [rng.gauss(0.0, 0.02) for _ in range(3)]) for i in range(10)}
    mid = {f"[m{i}]": (0.03, [rng.gauss(0.0, 0.003) for _ in range(3)]) for i in range(5)}
    direct = {"[d0]": (0.5, [0.40, -0.20, 0.50]), "[d1]": (0.7, [-0.30, 0.45, -0.10])}
    control = [
        aggregate("mul", op_rounds("mul", {**small, **mid}, switch={})),
        aggregate("nonzero", op_rounds("nonzero", direct, switch={}, timer="direct")),
    ]
    floor = noise_floor(control)
    mid_floor = floor.for_latency(0.03, "graph")
    assert mid_floor is not None
    assert mid_floor.value is not None  # 15 deltas: pooled with every graph-timed size
    assert mid_floor.pooled_with == "every size"
    big_direct = floor.for_latency(0.5, "direct")
    assert big_direct is not None
    assert big_direct.value is not None  # 6 deltas, 6 of its size: the floor of every row
    assert big_direct.value >= 0.3
    assert big_direct.pooled_with == "every size and timer"
    # a steady +30 % of nonzero is not beyond that noise
    nz = aggregate("nonzero", op_rounds("nonzero", {"[d0]": (0.5, [0.30, 0.28, 0.32])},
                                        ir_b="x", timer="direct"))  # fmt: skip
    (judged,) = judge_screen([nz], floor)
    assert beyond(judged) == []
    assert judged.shapes[0].noise == big_direct.value
    # the direct timer's classes are listed where it measured rows only
    assert [c.size for c in floor.classes if c.timer] == ["≥ 100 µs"]


def test_a_screen_timed_by_one_timer_lists_only_its_classes() -> None:
    """The cpu timer is named direct: a cpu screen's floor has no empty graph classes."""
    rng = random.Random(5)
    shapes = {f"[{i}]": (0.03, [rng.gauss(0.0, 0.01) for _ in range(3)]) for i in range(8)}
    floor = noise_floor([aggregate("relu", op_rounds("relu", shapes, switch={}, timer="direct"))])
    assert {c.timer for c in floor.classes} == {"direct"}
    assert "too few (0)" not in floor.describe()


def test_a_shape_whose_sides_were_timed_differently_is_mixed() -> None:
    rounds = op_rounds("mm", {"[1]": (0.03, [0.01, 0.02])}, switch={})
    for r in rounds:
        r.rows_b[0] = dataclasses.replace(r.rows_b[0], timer="direct")
    shape = aggregate("mm", rounds).shapes[0]
    assert shape.timer == "mixed"


def test_the_kernel_timer_s_reading_without_a_graph_is_its_own_and_floored_apart() -> None:
    """A kernel-timed row with a fallback reason was read by its eager calls' kernels, not by a
    graph's replays: a side read so against a side read from a graph is mixed, and shapes read
    so on both sides are floored apart, as the direct timer's are."""
    rounds = op_rounds("nonzero", {"[1]": (0.03, [0.01, 0.02])}, switch={}, timer="kernel")
    for r in rounds:
        r.rows_b[0] = dataclasses.replace(r.rows_b[0], fallback="NotCaptured: host read")
    shape = aggregate("nonzero", rounds).shapes[0]
    assert shape.timer == "mixed"
    a, b = rounds[0].rows_a[0], rounds[0].rows_b[0]
    assert Pair(("nonzero", "float16", "[1]", 0), a, b).timers_differ
    for r in rounds:
        r.rows_a[0] = dataclasses.replace(r.rows_a[0], fallback="NotCaptured: host read")
    assert not Pair(("nonzero", "float16", "[1]", 0), rounds[0].rows_a[0], b).timers_differ
    # the baseline read from a graph on one side and eagerly on the other: no in-run control
    base_a = dataclasses.replace(a, latency_base=0.01, timer_base="kernel")
    base_b = dataclasses.replace(base_a, fallback_base="NotCaptured: host read")
    assert Pair(("nonzero", "float16", "[1]", 0), base_a, base_a).base_delta == 0.0
    assert Pair(("nonzero", "float16", "[1]", 0), base_a, base_b).base_delta is None
    shape = aggregate("nonzero", rounds).shapes[0]
    assert shape.timer == EAGER_KERNEL
    assert (timer_group(EAGER_KERNEL), timer_group("direct"), timer_group("kernel")) == (
        EAGER_KERNEL,
        "direct",
        None,
    )


def test_rows_read_without_a_graph_get_floors_apart_from_the_direct_timer_s() -> None:
    """One noisy direct-timed operator must not set the floor of the quiet rows the kernel timer
    read eagerly, nor of the graph-read ones."""
    rng = random.Random(11)
    eager = {f"[e{i}]": (0.005, [rng.gauss(0.0, 0.001) for _ in range(3)]) for i in range(10)}
    graph = {f"[g{i}]": (0.005, [rng.gauss(0.0, 0.001) for _ in range(3)]) for i in range(10)}
    direct = {"[d0]": (0.005, [0.30, -0.25, 0.10])}
    eager_rounds = op_rounds("nonzero", eager, switch={}, timer="kernel")
    for r in eager_rounds:
        for rows in (r.rows_a, r.rows_b):
            rows[:] = [dataclasses.replace(x, fallback="NotCaptured: host read") for x in rows]
    control = [
        aggregate("nonzero", eager_rounds),
        aggregate("abs", op_rounds("abs", graph, switch={}, timer="kernel")),
        aggregate("unique", op_rounds("unique", direct, switch={}, timer="direct")),
    ]
    floor = noise_floor(control)
    eager_floor = floor.for_latency(0.005, EAGER_KERNEL)
    assert eager_floor is not None
    assert eager_floor.timer == EAGER_KERNEL
    assert eager_floor.value is not None
    assert eager_floor.value < 0.01, floor.describe()
    assert "eager-kernel timer < 10 µs" in floor.describe()
    direct_floor = floor.for_latency(0.005, "direct")
    assert direct_floor is not None
    assert direct_floor.timer == "direct"
    assert {c["timer"] for c in floor.to_json()["classes"]} == {None, "direct", EAGER_KERNEL}
