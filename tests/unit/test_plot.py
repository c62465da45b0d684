"""The per-operator plot of an A/B screen: written only for results with a range, only when
matplotlib is installed, never left behind to contradict a later aggregation."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.adapters import plot
from pytest_zlbench.core import screening


def result(verdict: str = screening.IR_CHANGED, **kw: object) -> screening.OpResult:
    shapes = (
        screening.ShapeResult(("mm", "torch.float16", "[384, 384]", 0), (0.0128, -0.0126, 0.009)),
        screening.ShapeResult(("mm", "torch.float16", "[4096, 4096]", 0), (0.38, 0.39, 0.37)),
        screening.ShapeResult(("mm", "torch.float16", "[4096, 4096]", 1), (0.41, 0.40, 0.42)),
    )
    fields: dict[str, object] = {
        "op": "mm",
        "verdict": verdict,
        "rounds": 3,
        "rounds_failed": 0,
        "rows_paired": 3,
        "rows_total": 3,
        "shapes": shapes,
        "kernels_a": 1,
        "kernels_b": 1,
        "kernels_changed": ("mm_kernel",),
        "convert_layout_a": 0,
        "convert_layout_b": 1,
        "within_side_spread": 0.01,
        "delta_spread": 0.02,
        "notes": (),
    }
    fields.update(kw)
    return screening.OpResult(**fields)  # type: ignore[arg-type]


def test_a_result_with_a_range_gets_its_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, result())
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml")
    assert "IR_CHANGED" in svg  # the title names the verdict and the range
    assert "sign changes across rounds (1)" in svg  # the 384² shape flips sign
    assert "float16 [4096, 4096] #2" in svg  # a repeated size detail is told apart
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically


def test_a_noise_floor_and_a_control_say_what_they_are(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, result(screening.NO_IR_DIFF))
    assert "noise floor" in path.read_text()
    assert plot.write(path, result(screening.NO_IR_DIFF, control=True))
    assert "A/A control" in path.read_text()


def test_an_operator_without_triton_has_numbers_and_a_plot(tmp_path: Path) -> None:
    """NO_TRITON operators have per-shape deltas like any other: shown, and plotted."""
    pytest.importorskip("matplotlib")
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, result(screening.NO_TRITON))
    assert "NO_TRITON" in path.read_text()


@pytest.mark.parametrize(
    "kw",
    [
        {"verdict": screening.NO_ROWS, "shapes": ()},
        {"rounds_failed": 1},  # an operator with a failed round gets no range, and no plot
    ],
)
def test_no_range_no_plot_and_a_stale_one_goes(tmp_path: Path, kw: dict[str, object]) -> None:
    path = tmp_path / plot.PLOT_FILE
    path.write_text("<svg>from an earlier aggregation</svg>")
    assert not plot.write(path, result(**kw))
    assert not path.exists()


def test_without_matplotlib_there_is_no_plot_and_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    path = tmp_path / plot.PLOT_FILE
    assert not plot.write(path, result())
    assert not path.exists()


NOISE_LABEL = "noise its shapes were judged against (median, ±)"


def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures the module draws, kept as they are saved."""
    figures: list[Any] = []
    monkeypatch.setattr(plot, "_save_svg", lambda fig, path, *_: figures.append(fig))
    return figures


def legend_texts(fig: Any) -> list[str]:
    (legend,) = fig.legends  # the figure's, under the axes
    return [text.get_text() for text in legend.get_texts()]


@pytest.mark.parametrize("which", ["operator", "overview"])
def test_a_legend_covers_no_data_and_text_stays_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """The legend sat inside the axes ("best"), over points and noise bands; and the SVG drew
    its text as glyph paths, about 70 KB a plot."""
    pytest.importorskip("matplotlib")
    entry = result().to_json()
    path = tmp_path / "p.svg"
    if which == "operator":
        assert plot.write(path, entry)
    else:
        assert plot.write_overview(path, {"kind": "screen", "switch": {}, "operators": [entry]})
    svg = path.read_text()
    assert "<text" in svg
    assert 'id="DejaVuSans-' not in svg  # no glyph definitions
    figures = drawn(monkeypatch)
    if which == "operator":
        plot.write(tmp_path / "q.svg", entry)
    else:
        plot.write_overview(tmp_path / "q.svg", {"kind": "screen", "operators": [entry]})
    (fig,) = figures
    fig.draw_without_rendering()  # lays the figure out
    (ax,) = fig.axes
    (legend,) = fig.legends
    box, axes = legend.get_window_extent(), ax.get_window_extent()
    assert box.y1 <= axes.y0  # wholly under the axes


@pytest.mark.parametrize(
    ("noises", "band"),
    [((0.0, 0.0), False), ((0.0, None), False), ((None, None), False), ((0.0, 2.5), True)],
    ids=["all-zero", "zero-and-none", "none", "one-wide"],
)
def test_the_overview_draws_a_noise_band_only_with_noise_to_show(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    noises: tuple[float | None, float | None],
    band: bool,
) -> None:
    """Every noise 0.0 drew a band of no width and its entry in the legend, standing for
    nothing in the picture."""
    pytest.importorskip("matplotlib")
    figures = drawn(monkeypatch)
    operators = [
        {**result(op=op).to_json(), "noise_pct": noise}
        for op, noise in zip(("mm", "addmm"), noises, strict=True)
    ]
    doc = {"kind": "screen", "switch": {"DISABLE_MMA_V3": "1"}, "operators": operators}
    assert plot.write_overview(tmp_path / plot.OVERVIEW_FILE, doc)
    (fig,) = figures
    texts = legend_texts(fig)
    assert "IR_CHANGED: range, median" in texts  # the legend is drawn
    assert (NOISE_LABEL in texts) is band
    assert bool(fig.axes[0].patches) is band  # the band's bars


def test_an_operator_plot_draws_no_band_of_zero_noise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    figures = drawn(monkeypatch)
    entry = result().to_json()
    entry["shapes"] = [{**s, "noise_pct": 0.0} for s in entry["shapes"]]
    assert plot.write(tmp_path / plot.PLOT_FILE, entry)
    (fig,) = figures
    assert not any(t.startswith("noise it was judged against") for t in legend_texts(fig))
    assert not fig.axes[0].patches


def test_a_plot_is_redrawn_only_when_what_it_draws_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the end of a screen judges every operator again, and each judgement lists the screen's
    # floor operators: ab.json changes, the picture does not, and drawing it again costs
    # 0.3 s an operator
    pytest.importorskip("matplotlib")
    saved: list[Path] = []
    save = plot._save_svg
    monkeypatch.setattr(plot, "_save_svg", lambda fig, p, *a: (saved.append(p), save(fig, p, *a)))
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, result())
    entry = result().to_json()
    entry["floor"] = {"source": "NO_IR_DIFF operators", "ops": ["mm", "abs"]}
    entry["notes"] = ["a note the plot does not show"]
    assert plot.write(path, entry)
    assert len(saved) == 1  # not drawn again

    entry["shapes"][0]["noise_pct"] = 0.5  # a band the plot draws
    assert plot.write(path, entry)
    assert plot.write(path, result())
    assert len(saved) == 3
    monkeypatch.setattr(plot, "_PLOT_FORMAT", plot._PLOT_FORMAT + 1)  # the drawing changed
    assert plot.write(path, result())
    assert len(saved) == 4


def test_a_plot_of_another_result_goes_when_it_cannot_be_redrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, result())
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # matplotlib gone
    assert plot.write(path, result())  # the same result: its plot stands
    assert path.is_file()
    assert not plot.write(path, result(screening.NO_IR_DIFF))
    assert not path.exists()  # it would show another verdict


def test_writing_a_result_removes_a_plot_of_another(tmp_path: Path) -> None:
    # the end of a screen writes every ab.json first and draws after screen.tsv: a session
    # stopped in between leaves no plot that contradicts its ab.json
    pytest.importorskip("matplotlib")
    from pytest_zlbench.screen.results import write_op_result

    op_dir = tmp_path / "mm"
    op_dir.mkdir()
    write_op_result(op_dir, result())
    assert plot.draw(op_dir / plot.PLOT_FILE, result(), "mm")
    write_op_result(op_dir, result())
    assert (op_dir / plot.PLOT_FILE).is_file()  # it still shows this result
    write_op_result(op_dir, result(screening.NO_IR_DIFF))
    assert not (op_dir / plot.PLOT_FILE).exists()


def _op_dirs(tmp_path: Path, count: int) -> list[tuple[Path, screening.OpResult]]:
    """``count`` operator directories, each with the ``ab.json`` of its result."""
    from pytest_zlbench.screen.results import write_op_result

    out = []
    for k in range(count):
        op_dir = tmp_path / f"op{k}"
        op_dir.mkdir()
        res = result(op=f"op{k}")
        write_op_result(op_dir, res)
        out.append((op_dir, res))
    return out


def test_many_plots_are_drawn_in_a_few_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    import subprocess

    from pytest_zlbench.screen import results

    plots = _op_dirs(tmp_path, 6)
    monkeypatch.setattr(results, "PLOTS_PER_PROCESS", 3)
    monkeypatch.setattr(results.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    commands: list[list[str]] = []
    popen = subprocess.Popen

    def recorded(command: list[str], **kw: Any) -> Any:
        commands.append(command)
        return popen(command, **kw)

    monkeypatch.setattr(results.subprocess, "Popen", recorded)
    drawn: list[str] = []
    monkeypatch.setattr(plot, "draw", lambda path, r, name: drawn.append(path.parent.name))
    results.draw_op_plots(plots)
    assert [c[1:3] for c in commands] == [["-m", "pytest_zlbench.adapters.plot"]] * 2
    assert sorted(a for c in commands for a in c[3:]) == sorted(str(d) for d, _ in plots)
    for op_dir, res in plots:  # drawn there, from ab.json, as this process would have
        assert plot.shows(op_dir / plot.PLOT_FILE, res)
    assert drawn == [d.name for d, _ in plots]  # each checked here after (it stands: shown)


def test_a_plot_the_processes_did_not_draw_is_drawn_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from pytest_zlbench.screen import results

    plots = _op_dirs(tmp_path, 4)
    in_processes = results._draw_in_processes

    def unreadable_first(dirs: list[Path], count: int) -> None:
        (plots[0][0] / "ab.json").unlink()  # its process cannot read it
        in_processes(dirs, count)

    monkeypatch.setattr(results, "_draw_in_processes", unreadable_first)
    monkeypatch.setattr(results, "PLOTS_PER_PROCESS", 2)
    monkeypatch.setattr(results.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    here: list[str] = []
    save = plot._save_svg
    monkeypatch.setattr(
        plot, "_save_svg", lambda f, p, d=None: (here.append(p.parent.name), save(f, p, d))
    )
    results.draw_op_plots(plots)
    for op_dir, res in plots:
        assert plot.shows(op_dir / plot.PLOT_FILE, res)
    assert here == ["op0"]  # the others by the processes


def test_plots_that_show_their_results_start_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from pytest_zlbench.screen import results

    plots = _op_dirs(tmp_path, 4)
    for op_dir, res in plots:
        plot.write(op_dir / plot.PLOT_FILE, res)
    monkeypatch.setattr(results, "PLOTS_PER_PROCESS", 2)
    monkeypatch.setattr(results.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(results.subprocess, "Popen", None)  # would fail if called
    results.draw_op_plots(plots)  # a second report of the same root


def test_few_plots_are_drawn_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from pytest_zlbench.screen import results

    plots = _op_dirs(tmp_path, 3)
    monkeypatch.setattr(results.subprocess, "Popen", None)  # would fail if called
    results.draw_op_plots(plots)
    for op_dir, res in plots:
        assert plot.shows(op_dir / plot.PLOT_FILE, res)


def test_processes_draw_only_what_ab_json_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plot process draws from ``ab.json``: a result judged otherwise (``zlbench plot
    --floor-from``, another floor than the screen's) is drawn here, not twice."""
    from pytest_zlbench.screen import results

    plots = _op_dirs(tmp_path, 4)
    judged = [(d, result(screening.NO_IR_DIFF, op=d.name)) for d, _ in plots[:2]] + plots[2:]
    monkeypatch.setattr(results, "PLOTS_PER_PROCESS", 1)
    monkeypatch.setattr(results.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(plot, "available", lambda: True)
    started: list[list[str]] = []
    monkeypatch.setattr(
        results, "_draw_in_processes", lambda dirs, count: started.append([d.name for d in dirs])
    )
    results.draw_in_processes(judged)
    assert started == [["op2", "op3"]]


def test_the_plot_module_names_an_operator_it_cannot_read_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    plots = _op_dirs(tmp_path, 2)
    (plots[0][0] / "ab.json").write_text("{not json")
    assert plot.main([str(d) for d, _ in plots]) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("zlbench: op0: no plot (JSONDecodeError: ")
    assert not (plots[0][0] / plot.PLOT_FILE).exists()
    assert plot.shows(plots[1][0] / plot.PLOT_FILE, plots[1][1])


@pytest.mark.parametrize(
    ("current", "gate_failed", "expected"),
    [(0, False, 2), (1, False, 2), (0, True, 6), (4, False, 4), (4, True, 4)],
)
def test_plots_stopped_by_ctrl_c_read_interrupted_but_never_hide_the_gate_or_an_error(
    tmp_path: Path, current: int, gate_failed: bool, expected: int
) -> None:
    """A Ctrl-C while the plots are drawn ends the session interrupted (2), as pytest's own;
    the gate's failure (6) and a usage error (4), judged before the plots, keep their status."""
    from pytest_zlbench.core.gate import Regression, Verdict
    from pytest_zlbench.screen.outputs import Outputs, exit_status

    regressions = (Regression("mm", 43.0, "effect"),) if gate_failed else ()
    outputs = Outputs(
        tmp_path,
        {},
        tmp_path / "screen.tsv",
        Verdict(5.0, regressions, ()),
        plots_interrupted=f"zlbench report {tmp_path}",
    )
    assert exit_status(current, outputs) == expected


def test_a_plot_process_killed_mid_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plot process killed (its time up, or a Ctrl-C) between the atomic write's temporary
    file and its rename left ``.delta.svg.*.tmp`` in the operator's folder."""
    import subprocess

    from pytest_zlbench.adapters import plot as plot_module
    from pytest_zlbench.screen import results

    popen = subprocess.Popen
    op_dirs = [tmp_path / "a", tmp_path / "b"]
    for op_dir in op_dirs:
        op_dir.mkdir()
    (tmp_path / "a" / "notes.txt").write_text("kept")

    def stuck_writer(command: list[str], **kw: Any) -> Any:
        # a process that makes the temporary file of its first plot, then hangs
        op_dir = Path(command[-1])
        tmp = op_dir / f".{plot_module.PLOT_FILE}.x1y2z3.tmp"
        script = f"open({str(tmp)!r}, 'w').write('<svg'); import time; time.sleep(60)"
        process = popen([sys.executable, "-c", script], **kw)
        while not tmp.exists():  # the process is killed once it holds its temporary file
            assert process.poll() is None
            time.sleep(0.01)
        return process

    monkeypatch.setattr(results.subprocess, "Popen", stuck_writer)
    clock = iter([0.0, 1e9, 1e9, 1e9]).__next__
    monkeypatch.setattr(results, "time", types.SimpleNamespace(monotonic=clock))
    results._draw_in_processes(op_dirs, 2)  # its time is up at once: both killed
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["notes.txt"]


def test_plot_processes_are_killed_by_a_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C while the end of a screen waits for its plot processes reaches the screen (the
    processes run in sessions of their own): none of them outlives it."""
    import subprocess

    from pytest_zlbench.screen import results

    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen
    wait = popen.wait

    def sleeper(command: list[str], **kw: Any) -> Any:
        started.append(popen([sys.executable, "-c", "import time; time.sleep(60)"], **kw))
        return started[-1]

    def interrupted(self: Any, timeout: float | None = None) -> int:
        if self.poll() is None and timeout is not None:
            raise KeyboardInterrupt
        return wait(self, timeout)

    monkeypatch.setattr(popen, "wait", interrupted)
    monkeypatch.setattr(results.subprocess, "Popen", sleeper)
    with pytest.raises(KeyboardInterrupt):
        results._draw_in_processes([tmp_path / "a", tmp_path / "b"], 2)
    assert len(started) == 2
    assert all(p.poll() is not None for p in started)


def _svg_height_pt(path: Path) -> float:
    import re

    found = re.search(r'height="([0-9.]+)pt"', path.read_text()[:2000])
    assert found is not None
    return float(found.group(1))


def test_an_operator_of_thousands_of_shapes_gets_a_plot_of_bounded_height(
    tmp_path: Path,
) -> None:
    """5,000 shapes of one operator gave one SVG 122,558 pt tall (and most of a large screen's
    end was spent drawing): the plot shows the most telling shapes, the title says how many of
    how many, and every shape stays in ab.json and the report."""
    pytest.importorskip("matplotlib")
    shapes = tuple(
        screening.ShapeResult(("mm", "torch.float16", f"[{k}]", 0), (0.001 * (k % 7), 0.002))
        for k in range(5000)
    )
    big = result(shapes=shapes)
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, big)
    assert _svg_height_pt(path) < 2500
    svg = path.read_text()
    assert f"{plot.PLOT_SHAPES_MOST} of 5000 shapes shown" in svg
    small = tmp_path / "small.svg"
    assert plot.write(small, result())  # a few shapes: all of them, no such words
    assert "shapes shown" not in small.read_text()
    assert plot.shows(path, big)
    assert not plot.shows(path, result())
