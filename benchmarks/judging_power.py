"""False positives and power of the screen's judgement, by Monte Carlo with fixed seeds.

Synthetic screens of ``--shapes`` shapes (default 100), each shape a per-round delta drawn around
its true effect, are judged by the project's own code (``core.judge.judge_screen``, with
``control_root_floor`` for a separate A/A control), ``--screens`` times per cell (default 40):

* **A/A** (no shape changed): shapes called changed per 100, at 2, 3 and 6 rounds, with a
  separate A/A control's floor, with the screen's own floor (an A/A control screen judged by
  itself) and with no floor at all (a switch screen with no control and no identical-IR
  operator: its own rounds give the prior); normal noise of 0.3 % a round, Student t with 3
  degrees of freedom scaled to 0.3 %, and mixed noise (each shape's scale log-uniform in
  0.1–1 %).
* **Power**: a tenth of the shapes moved by 1, 2 or 3 times their noise (0.3 % a round), the rest
  untouched, no floor; the share of moved shapes found, at 2, 3, 4, 6 and 10 rounds.

    python benchmarks/judging_power.py [--screens 40] [--shapes 100]

``tests/unit/test_judging_power.py`` runs the same cells and asserts the targets.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_zlbench.core.judge import control_root_floor, judge_screen
from pytest_zlbench.core.noise import NoiseFloor
from pytest_zlbench.core.opresult import OpResult, ShapeResult
from pytest_zlbench.core.verdicts import NO_IR_DIFF, NO_TRITON

SIGMA = 0.003  # the per-round noise of a shape (relative)
LATENCY_MS = 0.03  # every shape in one size class
ROUNDS = (2, 3, 6)
POWER_ROUNDS = (2, 3, 4, 6, 10)
EFFECTS = (1.0, 2.0, 3.0)  # in units of SIGMA


def _normal(rng: random.Random) -> float:
    return rng.gauss(0.0, 1.0)


def _t3(rng: random.Random) -> float:
    """Student t with 3 degrees of freedom, scaled to unit variance."""
    chi2 = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3)) / 3
    return rng.gauss(0.0, 1.0) / math.sqrt(chi2) / math.sqrt(3)


@dataclass(frozen=True)
class Noise:
    name: str
    draw: Callable[[random.Random], float]  # one unit-variance draw
    scale: Callable[[random.Random], float]  # a shape's per-round scale


NOISES = (
    Noise("normal 0.3 %", _normal, lambda rng: SIGMA),
    Noise("t3 0.3 %", _t3, lambda rng: SIGMA),
    Noise("mixed 0.1-1 %", _normal, lambda rng: 10 ** rng.uniform(-3, -2)),
)


def screen(
    rng: random.Random,
    op: str,
    shapes: int,
    rounds: int,
    noise: Noise,
    effects: Sequence[float] = (),
    control: bool = False,
) -> OpResult:
    """One operator of ``shapes`` shapes over ``rounds`` rounds (orders alternating as a
    screen's do); shape ``i`` moved by ``effects[i]`` noise scales where given."""
    orders = tuple("AB" if k % 2 == 0 else "BA" for k in range(rounds))
    out = []
    for i in range(shapes):
        scale = noise.scale(rng)
        effect = effects[i] * scale if i < len(effects) else 0.0
        deltas = tuple(math.expm1(effect + scale * noise.draw(rng)) for _ in range(rounds))
        key = (op, "float16", f"[{i}]", 0)
        out.append(
            ShapeResult(
                key,
                deltas,
                latency=LATENCY_MS,
                timer="graph",
                rounds=tuple(range(1, rounds + 1)),
                orders=orders,
            )
        )
    return OpResult(
        op=op,
        verdict=NO_IR_DIFF if control else NO_TRITON,
        rounds=rounds,
        rounds_failed=0,
        rows_paired=shapes,
        rows_total=shapes,
        shapes=tuple(out),
        kernels_a=None,
        kernels_b=None,
        kernels_changed=(),
        convert_layout_a=None,
        convert_layout_b=None,
        within_side_spread=None,
        delta_spread=None,
        notes=(),
        control=control,
        rounds_ok=rounds,
    )


def called(result: OpResult) -> list[bool]:
    return [s.beyond_noise for s in result.shapes]


def aa_rate(floor: str, rounds: int, noise: Noise, screens: int, shapes: int, seed: int) -> float:
    """Shapes called changed per 100 unchanged shapes, averaged over ``screens`` screens."""
    rng = random.Random(seed)
    found = 0
    for _ in range(screens):
        given: NoiseFloor | None = None
        if floor == "separate":
            aa = screen(rng, "aa", shapes, rounds, noise, control=True)
            given = control_root_floor([aa], "/aa")
        result = screen(rng, "op", shapes, rounds, noise, control=floor == "own")
        (judged,) = judge_screen([result], given)
        found += sum(called(judged))
    return 100 * found / (screens * shapes)


def power(effect: float, rounds: int, screens: int, shapes: int, seed: int) -> float:
    """The share of moved shapes (a tenth of each screen) found, with no floor."""
    rng = random.Random(seed)
    moved = max(1, shapes // 10)
    found = 0
    for _ in range(screens):
        result = screen(rng, "op", shapes, rounds, NOISES[0], [effect] * moved)
        (judged,) = judge_screen([result])
        found += sum(called(judged)[:moved])
    return found / (screens * moved)


def noisy_operator(rounds: int, screens: int, seed: int) -> tuple[float, float]:
    """One screen of 100 shapes of which 30 moved by 6σ, and an operator of 20 unmoved shapes
    three times noisier than its size class: that operator's false calls per 100 of its
    shapes, and the false discovery rate realised over the screen."""
    rng = random.Random(seed)
    noisy = Noise("noisy", _normal, lambda rng: 3 * SIGMA)
    false = found = false_noisy = 0
    for _ in range(screens):
        moved = screen(rng, "moved", 100, rounds, NOISES[0], [6.0] * 30)
        quiet = screen(rng, "noisy", 20, rounds, noisy)
        a, b = judge_screen([moved, quiet])
        calls_a, calls_b = called(a), called(b)
        false_noisy += sum(calls_b)
        found += sum(calls_a) + sum(calls_b)
        false += sum(calls_a[30:]) + sum(calls_b)
    return 100 * false_noisy / (20 * screens), false / max(found, 1)


FLOORS = ("separate", "own", "none")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screens", type=int, default=40)
    parser.add_argument("--shapes", type=int, default=100)
    args = parser.parse_args(argv)
    print(f"A/A: shapes called changed per 100 ({args.screens} screens of {args.shapes} shapes)")
    print("| noise | floor | " + " | ".join(f"{r} rounds" for r in ROUNDS) + " |")
    print("| --- | --- |" + " --- |" * len(ROUNDS))
    for n, noise in enumerate(NOISES):
        for f, floor in enumerate(FLOORS):
            cells = [
                f"{aa_rate(floor, r, noise, args.screens, args.shapes, 1000 * n + 10 * f + r):.3f}"
                for r in ROUNDS
            ]
            print(f"| {noise.name} | {floor} | " + " | ".join(cells) + " |")
    print()
    print("An operator three times noisier than its class, beside 30 shapes moved by 6σ")
    print("| rounds | its false calls per 100 shapes | false discovery rate realised |")
    print("| --- | --- | --- |")
    for r in ROUNDS:
        per_100, fdr = noisy_operator(r, args.screens, 900 + r)
        print(f"| {r} | {per_100:.2f} | {fdr:.3f} |")
    print()
    print("Power: share of moved shapes found (no floor, normal noise 0.3 % a round)")
    print("| effect | " + " | ".join(f"{r} rounds" for r in POWER_ROUNDS) + " |")
    print("| --- |" + " --- |" * len(POWER_ROUNDS))
    for e, effect in enumerate(EFFECTS):
        cells = [
            f"{power(effect, r, args.screens, args.shapes, 500 + 10 * e + r):.3f}"
            for r in POWER_ROUNDS
        ]
        print(f"| {effect:g}σ ({effect * SIGMA * 100:.1f} %) | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
