"""The curated assets (``ops/``) against FlagGems v5.3.4, and the pure code
that reads a suite statically (``core.inventory``, ``core.shapes``).

CI has no FlagGems checkout: the checks read ``tests/data/flaggems_v5.3.4_classes.json``, which
``tools/flaggems_facts.py`` derives from one. Only the freshness check needs the checkout
(``.fg``) and skips without it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core import compat, inventory, shapes

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "data" / "flaggems_v5.3.4_classes.json"
OPS = compat.OPS_DIR
SMOKE = OPS / "shapes" / "smoke.yaml"
CHECKOUT = ROOT / ".fg"
#: core_shapes.yaml keys that are only YAML anchors for others, never an op or a class
ANCHOR_ONLY = {"single_dim_shapes"}


@cache
def facts() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FACTS.read_text())
    return data


@cache
def defs() -> tuple[inventory.ClassInfo, ...]:
    return tuple(
        inventory.ClassInfo(c["name"], c["file"], tuple(c["bases"]), c["set_shapes"])
        for c in facts()["classes"]
    )


def mro_in(file: str, cls: str) -> tuple[str, ...]:
    table = inventory.class_table(defs(), file)
    return inventory.mro(cls, {n: c.bases for n, c in table.items()})


@cache
def smoke() -> dict[str, shapes.ShapeEntry]:
    return shapes.load_shape_file(SMOKE)


def uses() -> list[tuple[str, str, str, str | None, bool]]:
    return [tuple(u) for u in facts()["uses"]]  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# core.inventory on small sources

MODULE = """
import pytest
import flag_gems
from . import base

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.skipif(X, reason="module guard")]
_named = pytest.mark.skipif(Y, reason=f"triton {V} bug")


class LocalBenchmark(base.UnaryPointwiseBenchmark):
    def set_shapes(self, shape_file_path=None):
        super().set_shapes(shape_file_path)


class FixedBenchmark(LocalBenchmark):
    def set_shapes(self, shape_file_path=None):
        self.shapes = [(1,)]


def _helper(op):
    return base.GenericBenchmark(op_name=op, torch_op=None, input_fn=None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
@pytest.mark.abs
@pytest.mark.abs_extra
def test_abs():
    bench = LocalBenchmark(op_name="abs", torch_op=torch.abs)
    bench.run()


@pytest.mark.parametrize("bench_cls", [LocalBenchmark, pytest.param(FixedBenchmark, marks=[])])
def test_param(bench_cls):
    bench_cls(op_name="p", torch_op=None).run()


@_named
@pytest.mark.gelu
def test_gelu_backward():
    bench = base.UnaryPointwiseBenchmark(op_name="gelu", torch_op=None, is_backward=True)
    bench.run()


@pytest.mark.skip(reason="broken")
@pytest.mark.via_helper
def test_helper():
    _helper("h").run()


def test_unmarked():
    pass


class TestParam:
    def __init__(self):
        pass

    def test_not_collected(self):
        pass


class TestGroup:
    @pytest.mark.in_class
    def test_method(self):
        base.BlasBenchmark(op_name="mm", torch_op=None, input_fn=None).run()
"""


def scan() -> inventory.ModuleScan:
    known = ("Benchmark", "GenericBenchmark", "UnaryPointwiseBenchmark", "BlasBenchmark")
    return inventory.scan_module(MODULE, "test_x.py", known)


def test_scan_module_tests() -> None:
    tests = {t.name: t for t in scan().tests}
    assert list(tests) == [
        "test_abs",
        "test_param",
        "test_gelu_backward",
        "test_helper",
        "test_unmarked",
        "TestGroup::test_method",
    ]
    # the mark nearest the function is applied first, as pytest's iter_markers sees it
    assert tests["test_abs"].op_id == "abs_extra"
    assert tests["test_abs"].benchmark_class == "LocalBenchmark"
    assert tests["test_abs"].op_name == "abs"
    assert tests["test_abs"].guards == ("CUDA is not available", "module guard")
    assert tests["test_param"].benchmark_class == "LocalBenchmark|FixedBenchmark"
    assert tests["test_param"].parametrized
    assert tests["test_param"].op_id == ""
    assert tests["test_gelu_backward"].op_name == "gelu_backward"
    assert tests["test_gelu_backward"].guards == ("expr: f'triton {V} bug'", "module guard")
    assert tests["test_helper"].benchmark_class == "GenericBenchmark"
    assert tests["test_helper"].guards == ("broken", "module guard")
    assert tests["test_unmarked"].benchmark_class == ""
    assert tests["TestGroup::test_method"].op_id == "in_class"
    assert tests["TestGroup::test_method"].benchmark_class == "BlasBenchmark"


def test_scan_module_classes() -> None:
    classes = {c.name: c for c in scan().classes}
    assert classes["LocalBenchmark"].bases == ("UnaryPointwiseBenchmark",)
    assert classes["LocalBenchmark"].set_shapes == "file"
    assert classes["FixedBenchmark"].set_shapes == "own"
    table = inventory.class_table(
        [
            inventory.ClassInfo("Benchmark", "base.py", (), "own"),
            inventory.ClassInfo("UnaryPointwiseBenchmark", "base.py", ("Benchmark",)),
            *scan().classes,
        ],
        "test_x.py",
    )
    assert "TestParam" not in table
    assert inventory.uses_shape_file("LocalBenchmark", table)
    assert not inventory.uses_shape_file("FixedBenchmark", table)
    assert inventory.uses_shape_file("UnaryPointwiseBenchmark", table)


def test_benchmark_class_of() -> None:
    assert inventory.benchmark_class_of(MODULE, "test_abs") == "LocalBenchmark"
    assert inventory.benchmark_class_of(MODULE, "TestGroup::test_method") == "BlasBenchmark"
    assert inventory.benchmark_class_of(MODULE, "test_missing") == ""
    with pytest.raises(ValueError, match="not Python"):
        inventory.scan_module("def (:\n", "broken.py")


def test_class_table_prefers_the_file_then_shared_modules() -> None:
    classes = [
        inventory.ClassInfo("Benchmark", "base.py", ()),
        inventory.ClassInfo("X", "base.py", ("Benchmark",)),
        inventory.ClassInfo("X", "test_a.py", ("X",)),  # class X(base.X)
        inventory.ClassInfo("Z", "base.py", ("Benchmark",)),
        inventory.ClassInfo("Z", "test_a.py", ("X",)),
        inventory.ClassInfo("Y", "test_b.py", ("Benchmark",)),
        inventory.ClassInfo("Y", "test_c.py", ("Benchmark",)),
        inventory.ClassInfo("Other", "test_a.py", ("object",)),
    ]
    assert inventory.class_table(classes, "test_a.py")["Z"].file == "test_a.py"
    assert inventory.class_table(classes, "test_b.py")["Z"].file == "base.py"
    assert inventory.class_table(classes, "test_a.py")["X"].file == "base.py"
    assert inventory.mro(
        "Z", {n: c.bases for n, c in inventory.class_table(classes, "test_a.py").items()}
    ) == ("Z", "X", "Benchmark")
    assert inventory.class_table(classes, "test_c.py")["Y"].file == "test_c.py"
    assert inventory.class_table(classes, None)["Y"].file == "test_b.py"
    assert "Other" not in inventory.class_table(classes)


def test_mro_is_c3() -> None:
    bases = {
        "Benchmark": (),
        "BlasBenchmark": ("Benchmark",),
        "Mixin": (),
        "ParallelBlas": ("Mixin", "BlasBenchmark"),
        "D": ("ParallelBlas", "BlasBenchmark"),
    }
    assert inventory.mro("ParallelBlas", bases) == (
        "ParallelBlas",
        "Mixin",
        "BlasBenchmark",
        "Benchmark",
    )
    assert inventory.mro("D", bases) == ("D", "ParallelBlas", "Mixin", "BlasBenchmark", "Benchmark")
    assert inventory.mro("Unknown", bases) == ("Unknown",)
    with pytest.raises(ValueError, match="no consistent"):
        inventory.mro("Bad", {"A": ("B",), "B": (), "Bad": ("B", "A")})
    with pytest.raises(ValueError, match="inherits from itself"):
        inventory.mro("L", {"L": ("L",)})


def test_tsv_round_trip() -> None:
    rows = [
        inventory.InventoryRow("abs", "test_abs.py", "benchmark/test_abs.py::test_abs", "U", ()),
        inventory.InventoryRow("fft", "f.py", "n", "", ("CUDA is not available", "tab\there")),
    ]
    text = inventory.render_tsv(rows)
    assert text.splitlines()[0] == "op_id\tfile\tnode_id\tbenchmark_class\tskip_reasons"
    back = inventory.parse_tsv(text)
    assert back[0] == rows[0]
    assert back[1].reasons == ("CUDA is not available", "tab\there")  # JSON keeps it escaped
    assert text.count("\t") == 3 * 4
    static = inventory.render_tsv(rows, inventory.STATIC_TSV_COLUMNS)
    assert static.splitlines()[0].endswith("\tguards")
    assert inventory.parse_tsv(static)[0] == rows[0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("a\tb\n", "header"),
        ("op_id\tfile\tnode_id\tbenchmark_class\tskip_reasons\nx\ty\n", "2 cells"),
        ("op_id\tfile\tnode_id\tbenchmark_class\tskip_reasons\na\tb\tc\td\t[\n", "JSON list"),
        ("op_id\tfile\tnode_id\tbenchmark_class\tskip_reasons\na\tb\tc\td\t[1]\n", "strings"),
    ],
)
def test_tsv_errors(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        inventory.parse_tsv(text)


# --------------------------------------------------------------------------------------------
# core.shapes


def test_parse_and_resolve_shape_file() -> None:
    text = textwrap.dedent(
        """
        base: &b
          shapes: [[64, 64]]
        Benchmark:
          <<: *b
        BlasBenchmark:
          shapes: [[1, 64, 64, 64]]
          shape_desc: "B, M, N, K"
        index:
          shapes: [[[32, 32], [[8], [2, 8]]]]
        """
    )
    entries = shapes.parse_shape_file(text)
    assert entries["Benchmark"].shapes == ((64, 64),)
    assert entries["BlasBenchmark"].arities == {4}
    assert entries["index"].arities == {2}
    mro = ("ParallelBlas", "Mixin", "BlasBenchmark", "Benchmark")
    assert shapes.resolve(entries, "mm", mro) == "BlasBenchmark"
    assert shapes.resolve(entries, "index", mro) == "index"
    assert shapes.resolve(entries, None, ("Other",)) is None
    assert shapes.elements((2, 3, [4], True)) == 6
    assert shapes.largest_number(entries) == 64


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "non-empty mapping"),
        ("[1]", "non-empty mapping"),
        ("a: [\n", "not valid YAML"),
        ("Benchmark: 3\n", "expected a mapping"),
        ("Benchmark:\n  shape_desc: x\n", "non-empty list"),
        ("Benchmark:\n  shapes: []\n", "non-empty list"),
        ("Benchmark:\n  shapes: [3]\n", "is not a non-empty list"),
        ("Benchmark:\n  shapes: [[1]]\n  shape_desc: 3\n", "must be a string"),
    ],
)
def test_shape_file_errors(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        shapes.parse_shape_file(text, "s.yaml")


# --------------------------------------------------------------------------------------------
# the committed facts


def test_facts_file() -> None:
    data = facts()
    assert data["flaggems"] == "v5.3.4"
    assert data["commit"].startswith("f7c55cb2f")
    assert data["uses_columns"] == ["file", "test", "class", "op_name", "uses_shape_file"]
    assert {c["name"] for c in data["classes"]} >= {"Benchmark", "BlasBenchmark", "NormBenchmark"}
    assert data["core_shapes"]["BlasBenchmark"]["arities"] == [4]
    assert len({u[0] for u in data["uses"]}) > 600


# --------------------------------------------------------------------------------------------
# shapes/smoke.yaml


def used_classes() -> set[str]:
    return {u[2] for u in uses()}


def test_smoke_keeps_every_core_key_with_its_arities() -> None:
    core = facts()["core_shapes"]
    missing = sorted(set(core) - set(smoke()) - ANCHOR_ONLY)
    assert missing == []
    wrong = {
        key: (sorted(smoke()[key].arities), core[key]["arities"])
        for key in set(core) - ANCHOR_ONLY
        if not smoke()[key].arities <= set(core[key]["arities"])
    }
    assert wrong == {}


def test_smoke_keys_every_class_the_suite_uses() -> None:
    assert len(used_classes()) > 300
    assert sorted(used_classes() - set(smoke())) == []


def test_every_used_class_resolves_through_its_mro() -> None:
    """A key of its own or inherited through a base class listed in the file."""
    unresolved = sorted(
        {
            cls
            for file, _t, cls, _o, _r in uses()
            if shapes.resolve(smoke(), None, mro_in(file, cls)) is None
        }
    )
    assert unresolved == []


def test_every_test_gets_shapes_of_the_arity_its_class_reads() -> None:
    """For each test that reads the shape file, the entry the smoke file gives its (op name,
    class) has arities within the entry ``core_shapes.yaml`` gives it: BLAS tests get (B, M, N,
    K), never the 2-D shapes of ``Benchmark``."""
    core = facts()["core_shapes"]
    checked = 0
    bad = []
    for file, test, cls, op_name, reads in uses():
        if not reads:
            continue
        mro = mro_in(file, cls)
        core_key = shapes.resolve(core, op_name, mro)
        smoke_key = shapes.resolve(smoke(), op_name, mro)
        assert core_key is not None, (file, test)
        assert smoke_key is not None, (file, test)
        if not smoke()[smoke_key].arities <= set(core[core_key]["arities"]):
            bad.append((file, test, cls, smoke_key, core_key))
        checked += 1
    assert bad == []
    assert checked > 700


def test_blas_classes_get_four_numbers() -> None:
    for file, _test, cls, op_name, reads in uses():
        if reads and "BlasBenchmark" in mro_in(file, cls) and op_name not in smoke():
            key = shapes.resolve(smoke(), op_name, mro_in(file, cls))
            assert key is not None
            assert smoke()[key].arities == {4}, (file, cls, key)


def test_smoke_shapes_are_small() -> None:
    """About 1M elements per tensor at most (a few parameter-list classes aside, whose shapes
    are convolution or cache parameters rather than tensor shapes)."""
    entries = smoke()
    assert shapes.largest_number(entries) <= 2**20
    for key, entry in entries.items():
        for shape in entry.shapes:
            if len(shape) <= 3:
                assert shapes.elements(shape) <= 2**22, (key, shape)
    for b, m, n, k in entries["BlasBenchmark"].shapes:
        assert max(b * m * k, b * k * n, b * m * n) <= 2**20
    tensors = ("Benchmark", "UnaryPointwiseBenchmark", "UnaryReductionBenchmark", "NormBenchmark")
    for key in tensors:
        assert max(shapes.elements(s) for s in entries[key].shapes) <= 2**20, key


def test_smoke_respects_size_constraints_seen_on_the_h200() -> None:
    """act_quant_triton quantises blocks of up to 128 along the last dimension."""
    assert all(shape[-1] % 128 == 0 for shape in smoke()["act_quant_triton"].shapes)


def test_smoke_generated_tail_is_aliases() -> None:
    text = SMOKE.read_text()
    _head, _, tail = text.partition("generated by tools/flaggems_facts.py")
    assert tail
    for line in tail.splitlines()[1:]:
        assert re.fullmatch(r"\w+: \*\w+", line), line


# --------------------------------------------------------------------------------------------
# compat/musa.yaml and inventory_static.tsv


def test_musa_entries_name_guards_of_v534() -> None:
    rules = compat.load_rules(("musa",))
    assert rules is not None
    assert rules.flaggems == facts()["flaggems"]
    guards = facts()["guards"]
    stale = compat.stale_overrides(
        rules, {f: guards.get(f, ()) if f in guards else None for f in rules.files()}
    )
    assert stale == []
    absent = [e.label() for e in rules.keep if e.reason not in guards.get(e.file, ())]
    assert absent == []


def test_musa_covers_every_cuda_guard() -> None:
    """Every v5.3.4 guard whose reason names CUDA, an NVIDIA architecture or mthreads is either
    lifted or kept with a reason: none is left undecided."""
    rules = compat.load_rules(("musa",))
    assert rules is not None
    listed = {(e.file, e.reason) for e in rules.overrides + rules.keep}
    pattern = re.compile(r"cuda|hopper|blackwell|sm\d|nvidia|moore threads", re.IGNORECASE)
    undecided = [
        (file, reason)
        for file, reasons in facts()["guards"].items()
        for reason in reasons
        if pattern.search(reason) and (file, reason) not in listed
    ]
    assert undecided == []


def test_static_inventory() -> None:
    rows = inventory.parse_tsv((OPS / "inventory_static.tsv").read_text())
    assert (
        (OPS / "inventory_static.tsv")
        .read_text()
        .startswith("\t".join(inventory.STATIC_TSV_COLUMNS))
    )
    assert len(rows) == len({(u[0], u[1]) for u in uses()}) + sum(
        1 for r in rows if not r.benchmark_class
    )
    by_node = {r.node_id: r for r in rows}
    fft = by_node["benchmark/test_fft.py::test_perf_fft"]
    assert (fft.op_id, fft.file, fft.benchmark_class) == ("fft", "test_fft.py", "FFTBenchmark")
    assert fft.reasons == ("CUDA is not available",)
    mm = [r for r in rows if r.file == "test_mm.py"]
    assert {r.benchmark_class for r in mm} == {"BlasBenchmark", "MmSelfTransposeBenchmark"}
    prefill = by_node["benchmark/test_top_k_per_row_prefill.py::test_top_k_per_row_prefill"]
    assert prefill.reasons == ("CUDA device required",)  # the module-level pytestmark
    guards = facts()["guards"]
    for row in rows:
        assert set(row.reasons) <= set(guards.get(row.file, ())), row


def test_collected_inventory() -> None:
    """``inventory.tsv`` (collected on the H200) agrees with the static one: the same test
    functions, the same op id and class wherever the static reading can know them (parametrised
    functions take theirs from the parameters), and every class has a smoke-shape key."""
    text = (OPS / "inventory.tsv").read_text()
    assert text.startswith("\t".join(inventory.TSV_COLUMNS) + "\n")
    rows = inventory.parse_tsv(text)
    static = {
        r.node_id.removesuffix("[*]"): r
        for r in inventory.parse_tsv((OPS / "inventory_static.tsv").read_text())
    }
    functions = {r.node_id.split("[", 1)[0] for r in rows}
    assert functions == set(static)
    for row in rows:
        twin = static[row.node_id.split("[", 1)[0]]
        assert row.file == twin.file
        if twin.node_id.endswith("[*]"):
            assert row.benchmark_class in twin.benchmark_class.split("|"), row
        else:
            assert (row.op_id, row.benchmark_class) == (twin.op_id, twin.benchmark_class), row
    smoke = shapes.load_yaml((OPS / "shapes" / "smoke.yaml").read_text(), "smoke.yaml")
    assert {r.benchmark_class for r in rows if r.benchmark_class} <= set(smoke)
    fft = [r for r in rows if r.node_id == "benchmark/test_fft.py::test_perf_fft"]
    assert [r.reasons for r in fft] == [()]  # on the H200 the CUDA guard is not active


def test_ops_is_package_data() -> None:
    """Every file under ops/ matches a package-data pattern of pyproject.toml for the package
    setup.py maps ops/ to, so a wheel carries it."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["pytest_zlbench.ops"]
    assert '"pytest_zlbench.ops": "ops"' in (ROOT / "setup.py").read_text()
    files = [p for p in OPS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) >= 5
    for path in files:
        rel = path.relative_to(OPS)
        assert any(rel.match(pattern) for pattern in patterns), rel


@pytest.mark.skipif(not CHECKOUT.is_dir(), reason="no FlagGems checkout at .fg (CI has none)")
def test_derived_files_are_fresh() -> None:
    """The committed facts, static inventory and smoke tail are what the checkout gives."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "flaggems_facts.py"), str(CHECKOUT), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
