"""Never a side against itself: where a one-process worker's side launched a kernel it did not
compile (a launcher cached outside Triton handed it the other side's), that round enters no
delta and the operator is measured again one process per side from that round on.

The stand-in launcher is ``lru_cache``'d: it compiles once, in the cache folder and under the
switch of the side that called it first, and serves that kernel to both sides. Launching needs a
GPU, so the conftest stands in for Triton's launch hooks: each launch is reported, with the
kernel's cache entry, to the workers' launch recorders, whose reports go through the real
``op_ir`` (a kernel from outside the side's folder: ``compiled outside this side's cache
folder``)."""

from __future__ import annotations

import pytest
from test_one_process import TESTS
from test_sides import CONFTEST, SWITCH, ab, lines, screen

from pytest_zlbench.core import screening

#: the launch hooks of Triton, for the stand-in kernels of ``CACHED``
LAUNCH_HOOKS = """

import sys
import types

import pytest_zlbench.recording.op_ir as op_ir
from pytest_zlbench.adapters.triton_launches import Launched

hooks = sys.modules.setdefault("zl_launch_hooks", types.ModuleType("zl_launch_hooks"))
hooks.recorders = getattr(hooks, "recorders", [])


class StandInLaunches:
    '''A LaunchRecorder fed by the stand-in launcher instead of Triton's hook chains.'''

    def __init__(self, when):
        self.when = when
        self.launched = None
        hooks.recorders.append(self)

    def begin(self, op):
        self.launched = {}

    def launch(self, name, ttgir):
        if self.launched is not None and (self.when is None or self.when()):
            self.launched[ttgir] = Launched(name, "h" + str(abs(hash(ttgir))),
                                            ((name + ".ttgir", ttgir),))

    def end(self):
        launched, self.launched = self.launched or {}, None
        return list(launched.values())

    def uninstall(self):
        pass


def _install(self):
    if self.launches is None and self.when is not None:  # a side of a one-process worker
        self.launches = StandInLaunches(self.when)


op_ir.OpIrRecorder._install = _install
"""

#: an operator whose launcher is cached outside Triton
CACHED = '''

import functools
import sys


@functools.lru_cache(maxsize=None)
def cached_launcher(name):
    """Compiles once, for the side that calls first, and hands that kernel to every caller."""
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], name)
    os.makedirs(folder, exist_ok=True)
    ttgir = os.path.join(folder, name + ".ttgir")
    with open(ttgir, "w") as handle:
        body = "ttg.convert_layout\\n" if switched else "tt.dot\\n"
        handle.write("tt.func @" + name + "() {\\n" + body + "}\\n")

    def launch():
        for recorder in getattr(sys.modules.get("zl_launch_hooks"), "recorders", ()):
            recorder.launch(name, ttgir)
        return busy(3000 if switched else 300)

    return launch


@pytest.mark.zl_op("cached")
def test_cached(zl_bench):
    zl_bench(lambda: cached_launcher("cached_kernel")(), op="cached", dtype="int", shape="[8]")
'''


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST + LAUNCH_HOOKS)
    zl_pytester.makepyfile(test_ops=TESTS + CACHED)
    return zl_pytester


def test_a_kernel_cached_outside_triton_is_measured_again_apart_never_a_against_a(
    suite: pytest.Pytester,
) -> None:
    result, root, pids = screen(suite, "one-process", SWITCH, "--zl-rounds=2", "-k", "cached")
    assert result.ret == 0, result.outlines + result.errlines
    op = root / "cached"
    # round 1 in the one-process worker timed side A's kernel on both sides: set aside, failed
    assert (op / "r1_A.worker").is_dir()
    assert (op / "r1_B.worker").is_dir()
    # then one process per side from round 1 on: each side compiled its own kernel
    assert sorted(side for _, side in pids).count("B") == 2, pids
    assert "convert_layout" in next((op / "r1_B").rglob("*.ttgir")).read_text()
    data = ab(root, "cached")
    note = " ".join(map(str, data["notes"]))  # type: ignore[call-overload]
    assert "side B launched cached_kernel compiled for the other side" in note, note
    assert "measured again alone, one process per side" in note, note
    line = lines(root)["cached"]
    assert line.verdict == screening.IR_CHANGED, line
    # the switch's 10-fold slowdown, which a round of A against A would have hidden
    assert float(line.median_pct) > 100, line
