"""core.noise, core.judge: the floor a screen's shapes are judged against, and the judgement.

Every number here is synthetic and fixed (seeded): no timing.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence

import pytest

from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.judge import control_root_floor, judge_screen, noise_floor
from pytest_zlbench.core.noise import (
    EAGER_KERNEL,
    MIN_SHAPES,
    NO_FLOOR,
    OWN_ROUNDS,
    SIZE_CLASSES,
    NoiseFloor,
    size_class,
    timer_group,
)
from pytest_zlbench.core.pairing import Pair
from pytest_zlbench.core.records import Row
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


# -- a switch screen with identical-IR operators -----------------------------------------------


def mma_v3_screen() -> list[OpResult]:
    """DISABLE_MMA_V3=1 on the H200: mm's IR changed; mm_self_transpose [257, 96] read +0.41 %
    and +0.89 % in its two rounds. abs and mul are NO_IR_DIFF (their later rounds skipped), and
    their one round each is the screen's own noise."""
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
    # identical IR compared at every stage (the fake records TTGIR only)
    return [
        aggregate("mm", mm),
        dataclasses.replace(aggregate("mul", op_rounds("mul", quiet)), ir_complete=True),
        dataclasses.replace(
            aggregate("abs", op_rounds("abs", {"[64, 64]": (0.15, (0.012,))})), ir_complete=True
        ),
    ]


def test_a_small_delta_inside_the_screens_noise_is_not_beyond_it() -> None:
    mm, mul, abs_ = judge_screen(mma_v3_screen())
    assert (mm.verdict, mul.verdict, abs_.verdict) == (IR_CHANGED, NO_IR_DIFF, NO_IR_DIFF)
    floor = mm.floor
    assert floor is not None
    assert floor.source == "NO_IR_DIFF operators"
    assert floor.ops == ("abs", "mul")
    # mm's three shapes are too few for a prior of their own: the identical-IR operators'
    # single rounds, measured around zero, give it
    cls = floor.for_latency(0.031)
    assert cls is not None
    assert cls.value is not None
    assert cls.samples == 24  # mul's shapes of its size class
    assert 0.001 < cls.value < 0.008
    small = next(s for s in mm.shapes if s.key[2] == "[257, 96]")
    assert small.noise is not None
    assert small.noise > abs(small.estimate or 0)
    assert beyond(mm) == ["[1024, 1024]", "[4096, 4096]"]
    assert (mm.slower, mm.faster) == (2, 0)
    big = next(s for s in mm.shapes if s.key[2] == "[1024, 1024]")
    assert big.estimate == pytest.approx(math.sqrt(1.121 * 1.118) - 1)
    assert big.interval is not None
    assert big.interval[0] < big.estimate < big.interval[1]
    assert big.p is not None
    assert big.q is not None
    assert big.q >= big.p
    line = mm.to_line()
    assert (line.beyond, line.judged) == ("2", "3")
    assert (line.slower, line.faster) == ("2", "0")
    assert line.floor.startswith("NO_IR_DIFF operators (abs, mul)")
    assert "2 of 3 shapes beyond noise: 2 slower, 0 faster" in line.note
    assert "slowest +78.09% (95% CI" in line.note
    data = mm.to_json()
    assert (data["beyond"], data["judged"], data["direction"]) == (2, 3, "slower")
    assert data["worst_pct"] == pytest.approx(78.095, abs=0.01)
    assert data["floor"]["source"] == "NO_IR_DIFF operators"
    assert data["floor"]["fdr"] == 0.05
    by_shape = {s["shape"]: s for s in data["shapes"]}
    assert by_shape["[257, 96]"]["beyond_noise"] is False
    assert by_shape["[1024, 1024]"]["q"] <= 0.05
    assert by_shape["[1024, 1024]"]["ci_low_pct"] > 0


def test_identical_ir_compared_at_only_some_stages_gives_no_floor() -> None:
    """Identical TTGIR says nothing of a switch acting in PTX: such an operator's rounds are not
    taken as the screen's noise."""
    mm, mul, abs_ = mma_v3_screen()
    mul = dataclasses.replace(mul, ir_complete=False)
    abs_ = dataclasses.replace(abs_, ir_complete=False)
    floor = noise_floor([mm, mul, abs_])
    assert floor.source == OWN_ROUNDS


def test_an_aa_control_gives_the_floor_to_a_switched_screen() -> None:
    control = [aggregate("mul", op_rounds("mul", synthetic_aa(3), switch={}))]
    assert control[0].control
    floor = noise_floor(control)
    assert floor.source == "A/A control"
    mm, _, _ = mma_v3_screen()
    judged = judge_screen([mm], floor)[0]
    assert judged.floor is not None
    assert judged.floor.classes == floor.classes
    assert beyond(judged) == ["[1024, 1024]", "[4096, 4096]"]


def test_a_separate_control_s_floor_names_its_root() -> None:
    control = [aggregate("mul", op_rounds("mul", synthetic_aa(3), switch={}))]
    floor = control_root_floor(control, "/runs/aa")
    assert (floor.source, floor.root, floor.ops) == ("separate A/A control", "/runs/aa", ("mul",))
    assert floor.classes == noise_floor(control).classes
    assert floor.describe().startswith("separate A/A control /runs/aa (mul): ")
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
    one = aggregate("mul", op_rounds("mul", {"[1]": (0.02, (0.01,))}, switch={}))
    with pytest.raises(ValueError, match=r"^no operator of two rounds or more"):
        control_root_floor([one], "/runs/aa")


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


# -- the floor: the prior of per-round variance, per size class, a named source -----------------


def test_the_prior_is_the_per_round_scale_of_log_ratios() -> None:
    """Every shape of one class with one per-round spread: the prior is that scale with as
    many degrees of freedom as the shapes' rounds give (it cannot be known better)."""
    shapes = {f"[{i}]": (0.02, (0.02, -0.02, 0.0)) for i in range(MIN_SHAPES)}
    floor = noise_floor([aggregate("mul", op_rounds("mul", shapes, switch={}))])
    cls = floor.for_latency(0.02)
    assert cls is not None
    assert cls.value == pytest.approx(0.02, rel=0.01)
    assert cls.samples == MIN_SHAPES
    assert cls.df == 2 * MIN_SHAPES


def test_a_class_with_too_few_shapes_pools_with_the_next_or_says_too_few() -> None:
    rng = random.Random(4)
    shapes = {f"[{i}]": (0.02, (rng.gauss(0, 0.01), rng.gauss(0, 0.01))) for i in range(MIN_SHAPES)}
    shapes["[small]"] = (0.004, (0.05, -0.03))
    floor = noise_floor([aggregate("mul", op_rounds("mul", shapes, switch={}))])
    small = floor.for_latency(0.004)
    assert small is not None
    assert small.pooled_with == "10–100 µs"
    assert small.samples == MIN_SHAPES + 1  # its own shape is kept
    big = floor.for_latency(0.5)
    assert big is not None
    assert big.pooled_with == "10–100 µs"
    few = {f"[{i}]": (0.5, (0.01, 0.02)) for i in range(3)}
    lonely = noise_floor([aggregate("mul", op_rounds("mul", few, switch={}))])
    cls = lonely.for_latency(0.5)
    assert cls is not None
    assert cls.value is None
    assert "too few (3 shapes)" in lonely.describe()


def test_without_a_control_the_screen_s_own_rounds_give_the_prior_and_say_what_they_miss() -> None:
    """No A/A control and no identical-IR operator (every CPU screen, a switch that changes
    every kernel): the variance of each shape around its own mean does not see the switch, so
    the screen's own rounds give the prior; the floor says a repeating bias is not seen."""
    rng = random.Random(8)
    shapes = {
        f"[{i}]": (0.03, [(0.05 if i < 3 else 0.0) + rng.gauss(0.0, 0.004) for _ in range(3)])
        for i in range(20)
    }
    (result,) = judge_screen([aggregate("relu", op_rounds("relu", shapes, ir_b="x"))])
    assert result.floor is not None
    assert result.floor.source == OWN_ROUNDS
    assert "a bias that repeats in every round is not told from an effect" in (
        result.floor.describe()
    )
    assert beyond(result) == ["[0]", "[1]", "[2]"]


def test_one_round_everywhere_judges_nothing_and_says_why() -> None:
    (result,) = judge_screen(
        [aggregate("mm", op_rounds("mm", {"[1]": (0.02, (0.5,))}, ir_b="other"))]
    )
    assert result.floor is not None
    assert result.floor.source == NO_FLOOR
    assert not result.judged
    assert beyond(result) == []
    line = result.to_line()
    assert (line.beyond, line.judged, line.flips) == ("", "", "")  # not judged: empty cells
    assert line.rounds == "1"
    assert "IR changed, 1 round: no shape can be judged beyond noise" in line.note
    assert result.to_json()["floor"]["text"].startswith(
        "not judged: no operator of two rounds or more"
    )


def test_one_kernel_gets_one_verdict_in_one_screen() -> None:
    """On an H200, addcmul_out read '5 of 5 shapes beyond noise' and addcmul, the same kernel
    on the same shapes in the same screen, 0 of 5: each judged by its own spread and sign
    consistency. One prior and one false discovery rate for the screen judge both alike."""
    rng = random.Random(45)
    effect = 0.0044
    ops = []
    for name in ("addcmul", "addcmul_out"):
        shapes = {
            f"[{i}]": (0.02, [effect + rng.gauss(0.0, 0.001) for _ in range(2)]) for i in range(5)
        }
        ops.append(aggregate(name, op_rounds(name, shapes, ir_b="x")))
    rest = {f"[q{i}]": (0.02, [rng.gauss(0.0, 0.001) for _ in range(2)]) for i in range(20)}
    ops.append(aggregate("abs", op_rounds("abs", rest, ir_b="x")))
    a, b, _ = judge_screen(ops)
    assert len(beyond(a)) >= 4
    assert len(beyond(b)) >= 4


def test_a_significant_change_smaller_than_the_minimum_effect_is_not_called_one() -> None:
    rng = random.Random(2)
    shapes = {
        f"[{i}]": (0.02, [0.0005 + rng.gauss(0.0, 0.00002) for _ in range(3)]) for i in range(10)
    }
    results = [aggregate("abs", op_rounds("abs", shapes, ir_b="x"))]
    (strict,) = judge_screen(results)
    assert beyond(strict) == []  # 0.05 % < 0.2 %
    (loose,) = judge_screen(results, min_effect=0.0001)
    assert len(beyond(loose)) == 10
    assert all(s.q is not None and s.q < 0.05 for s in strict.shapes)  # significant all along


def test_the_floor_source_prefers_a_control_and_ignores_changed_operators() -> None:
    changed = aggregate("mm", op_rounds("mm", {"[1]": (0.02, (0.5, 0.5))}, ir_b="other"))
    assert noise_floor([changed]).source == OWN_ROUNDS
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
    assert line.judged == "2"


# -- timer groups ---------------------------------------------------------------------------------


def test_direct_timed_rows_get_a_floor_of_their_own() -> None:
    """On an H200 smoke-shape A/A screen, FlagGems' nonzero (its capture refused: timed by the
    direct timer, L2 flushed) moved 18-118 % between processes: were it pooled with the
    graph-timed rows of its size, a switch's +10 % on those would read as noise."""
    rng = random.Random(7)
    graph = {f"[{i}]": (0.03, [rng.gauss(0.0, 0.003) for _ in range(3)]) for i in range(10)}
    direct = {f"[d{i}]": (0.5, [rng.choice((-1, 1)) * rng.uniform(0.2, 0.6) for _ in range(3)])
              for i in range(MIN_SHAPES)}  # fmt: skip
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
    classes = floor.to_json()["classes"]
    assert {c["timer"] for c in classes} == {None, "direct"}


def test_a_short_class_falls_back_rather_than_leave_rows_without_a_prior() -> None:
    rng = random.Random(3)
    small = {f"[s{i}]": (0.004, [rng.gauss(0.0, 0.02) for _ in range(3)]) for i in range(4)}
    mid = {f"[m{i}]": (0.03, [rng.gauss(0.0, 0.003) for _ in range(3)]) for i in range(5)}
    direct = {"[d0]": (0.5, [0.40, -0.20, 0.50]), "[d1]": (0.7, [-0.30, 0.45, -0.10])}
    control = [
        aggregate("mul", op_rounds("mul", {**small, **mid}, switch={})),
        aggregate("nonzero", op_rounds("nonzero", direct, switch={}, timer="direct")),
    ]
    floor = noise_floor(control)
    mid_floor = floor.for_latency(0.03, "graph")
    assert mid_floor is not None
    assert mid_floor.value is not None  # 5 + 4 shapes: pooled with every graph-timed size
    assert mid_floor.pooled_with == "every size"
    big_direct = floor.for_latency(0.5, "direct")
    assert big_direct is not None
    assert big_direct.value is not None  # 2 shapes: the prior of every row
    assert big_direct.pooled_with == "every size and timer"
    assert [c.size for c in floor.classes if c.timer] == ["≥ 100 µs"]


def test_a_screen_timed_by_one_timer_lists_only_its_classes() -> None:
    """The cpu timer is named direct: a cpu screen's floor has no empty graph classes."""
    rng = random.Random(5)
    shapes = {f"[{i}]": (0.03, [rng.gauss(0.0, 0.01) for _ in range(3)]) for i in range(8)}
    floor = noise_floor([aggregate("relu", op_rounds("relu", shapes, switch={}, timer="direct"))])
    assert {c.timer for c in floor.classes} == {"direct"}
    assert "too few (0 shapes)" not in floor.describe()


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


def test_a_floor_names_and_lists_a_bounded_count_of_its_operators() -> None:
    """Every operator's entry and ``ab.json`` repeat its floor: naming a thousand operators
    there made a 1,000-operator screen's files grow with the square of its operators."""
    many = NoiseFloor("A/A control", tuple(f"op{i:04d}" for i in range(1000)))
    text = many.describe()
    assert text.startswith("A/A control (1000 operators: op0000, op0001, ")
    assert "op0999" not in text
    assert len(text) < 400
    listed = many.to_json()
    assert (len(listed["ops"]), listed["ops"][0], listed["op_count"]) == (50, "op0000", 1000)
    assert NoiseFloor("A/A control", ("abs", "mul")).describe().startswith("A/A control (abs, mul)")
