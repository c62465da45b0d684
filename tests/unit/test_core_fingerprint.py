from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench.core.fingerprint import (
    IrDiff,
    IrEntry,
    IrReport,
    compare,
    count_convert_layout,
    kernel_name,
    scan_cache,
    strip_locations,
    text_hash,
)

# Shaped like Triton 3.6's cache TTGIR: file-path locs in the header and trailer, name locs, nested
# callsite locs of inlined `tl.sum` code, locs inside function- and block-argument lists.
TEMPLATE = """\
#blocked = #ttg.blocked<{{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>
#blocked1 = #ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>
#loc = loc("{src}":{line}:0)
#loc11 = loc("x_ptr"(#loc))
module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"}} {{
  tt.func public @row_sum(%x_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}} loc("x_ptr"(#loc)), %out_ptr: !tt.ptr<f32> loc("out_ptr"(#loc))) attributes {{noinline = false}} {{
    %offs = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #blocked> loc(#loc12)
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #blocked> loc(#loc13)
    %x_0 = tt.addptr %x, %offs : tensor<512x!tt.ptr<f32>, #blocked>, tensor<512xi32, #blocked> loc(#loc13)
    %x_1 = tt.load %x_0 : tensor<512x!tt.ptr<f32>, #blocked> loc(#loc14)
    %s = "tt.reduce"(%x_1) <{{axis = 0 : i32}}> ({{
    ^bb0(%s_2: f32 loc(callsite(#loc3 at #loc4)), %s_3: f32 loc(callsite(#loc3 at #loc4))):
      %s_4 = {op} %s_2, %s_3 : f32 loc(callsite(callsite(#loc5 at #loc6) at #loc4))
      tt.reduce.return %s_4 : f32 loc(callsite(#loc5 at #loc4))
    }}) : (tensor<512xf32, #blocked>) -> f32 loc(#loc4)
    %c = ttg.convert_layout %x_1 : tensor<512xf32, #blocked> -> tensor<512xf32, #blocked1> loc(#loc7)
    tt.store %out_ptr, %s : !tt.ptr<f32> loc(#loc8)
    tt.return loc(#loc9)
  }} loc(#loc)
}} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("{src}":{line1}:24)
#loc3 = loc("{triton}/language/standard.py":291:15)
#loc4 = loc("{src}":{line2}:19)
#loc5 = loc("{triton}/language/standard.py":261:15)
#loc6 = loc("{triton}/language/standard.py":293:36)
#loc7 = loc("{src}":{line2}:8)
#loc8 = loc("{src}":{line3}:21)
#loc9 = loc("{src}":{line3}:4)
#loc12 = loc("offs"(#loc2))
#loc13 = loc("x"(#loc2))
#loc14 = loc("x"(#loc7))
"""  # noqa: E501 (real TTGIR lines are this long)


def make_ir(
    src: str = "/home/a/kernels.py",
    line: int = 10,
    op: str = "arith.addf",
    triton: str = "/venv/a/triton",
) -> str:
    return TEMPLATE.format(
        src=src, line=line, line1=line + 2, line2=line + 3, line3=line + 4, op=op, triton=triton
    )


# -- strip_locations ---------------------------------------------------------------------------


def test_strip_removes_every_location():
    out = strip_locations(make_ir())
    assert "loc(" not in out
    assert "#loc" not in out
    assert "kernels.py" not in out
    assert "standard.py" not in out
    assert out.endswith("}\n")
    assert all(line == line.rstrip() and line for line in out.splitlines())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "    %r = arith.addf %a, %b : f32 loc(callsite(callsite(#loc4 at #loc5) at #loc3))",
            "    %r = arith.addf %a, %b : f32",
            id="nested-callsite",
        ),
        pytest.param(
            "    ^bb0(%a: f32 loc(callsite(#loc2 at #loc3)), %b: f32 loc(#loc2)):",
            "    ^bb0(%a: f32, %b: f32):",
            id="block-arguments",
        ),
        pytest.param(
            '  tt.func @k(%p: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("p"(#loc)), '
            '%n: i32 loc("n"(#loc))) attributes {noinline = false} {',
            "  tt.func @k(%p: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %n: i32) "
            "attributes {noinline = false} {",
            id="function-arguments",
        ),
        pytest.param(
            '    tt.return loc("/tmp/we(ird) \\"dir/k.py":3:4)',
            "    tt.return",
            id="parentheses-and-quotes-inside-the-path",
        ),
        pytest.param(
            "    %0 = arith.addi %a, %b : i32 loc(fused[#loc1, #loc2])   ",
            "    %0 = arith.addi %a, %b : i32",
            id="fused-and-trailing-space",
        ),
        pytest.param(
            '    tt.print " loc(x) " {hex = false, isSigned = array<i32: 0>} : %x loc(#loc3)',
            '    tt.print " loc(x) " {hex = false, isSigned = array<i32: 0>} : %x',
            id="loc-inside-a-string-literal-is-kept",
        ),
        pytest.param("  } loc(#loc)", "  }", id="closing-brace"),
        pytest.param("    tt.return loc(callsite(#loc1", "    tt.return", id="unbalanced-loc"),
        pytest.param("loc(#loc1) tt.return", " tt.return", id="loc-at-line-start"),
        pytest.param("    %alloc(%x) : i32", "    %alloc(%x) : i32", id="not-a-loc"),
    ],
)
def test_strip_locations_on_one_line(line, expected):
    assert strip_locations(line) == expected + "\n"


def test_strip_drops_loc_lines_and_empty_lines():
    text = '#loc = loc("/a.py":1:0)\n\n  op1 loc(#loc)  \n   \n'
    text += "#loc3 = loc(callsite(#loc at #loc))\nop2\n"
    assert strip_locations(text) == "  op1\nop2\n"
    assert strip_locations("") == ""
    assert strip_locations('#loc1 = loc("x"(#loc))\n') == ""


def test_strip_hash_ignores_paths_and_line_numbers():
    base = text_hash(strip_locations(make_ir()))
    moved = make_ir(src="/elsewhere/deeper/kernels.py", triton="/opt/other-venv/triton")
    shifted = make_ir(line=11)
    assert text_hash(strip_locations(moved)) == base
    assert text_hash(strip_locations(shifted)) == base
    assert text_hash(make_ir()) != text_hash(moved)  # the raw text does differ


def test_strip_hash_sees_a_real_op_change():
    base = text_hash(strip_locations(make_ir()))
    assert text_hash(strip_locations(make_ir(op="arith.maxnumf"))) != base


# -- count_convert_layout, kernel_name ---------------------------------------------------------


def test_count_convert_layout():
    assert count_convert_layout(make_ir()) == 1
    assert count_convert_layout(strip_locations(make_ir())) == 1
    text = "\n".join(
        [
            "#blocked = #ttg.blocked<{sizePerThread = [1]}>",
            "#mma = #ttg.nvidia_mma<{versionMajor = 3}>",
            "%0 = ttg.convert_layout %x : tensor<1xf32, #a> -> tensor<1xf32, #b>",
            '%1 = "ttg.convert_layout"(%0) : (tensor<1xf32, #b>) -> tensor<1xf32, #a>',
            "%2 = ttg.convert_layout_like %1",
            "%3 = xttg.convert_layout %1",
            "%4 = ttg.local_load %m : !ttg.memdesc<1xf32> -> tensor<1xf32, #a>",
        ]
    )
    assert count_convert_layout(text) == 2
    assert count_convert_layout("") == 0


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("add_kernel.ttgir", "add_kernel"),
        ("@matmul_kernel.ttgir", "matmul_kernel"),
        ("HASHDIR/softmax_kernel.ttgir", "softmax_kernel"),
        (Path("/cache/HASH/@k.ttgir"), "k"),
    ],
)
def test_kernel_name(filename, expected):
    assert kernel_name(filename) == expected


# -- scan_cache --------------------------------------------------------------------------------

META = {"num_warps": 4, "num_ctas": 1, "num_stages": 3, "triton_version": "3.6.0"}


def write_artifact(root: Path, hash_dir: str, name: str, text: str, meta: object = META) -> None:
    d = root / hash_dir
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.ttgir").write_text(text, encoding="utf-8")
    if meta is not None:
        raw = meta if isinstance(meta, str) else json.dumps(meta)
        (d / f"{name}.json").write_text(raw, encoding="utf-8")


def test_scan_cache_reads_entries_and_metadata(tmp_path):
    write_artifact(tmp_path, "BBB", "row_sum", make_ir())
    write_artifact(tmp_path, "AAA", "@row_sum", make_ir(op="arith.maxnumf"))
    write_artifact(tmp_path, "CCC", "nometa", make_ir(), meta=None)
    write_artifact(tmp_path, "DDD", "badmeta", make_ir(), meta="{not json")
    write_artifact(tmp_path, "tmp.pid_12_abc", "half_written", make_ir())
    report = scan_cache(tmp_path)

    assert [e.path for e in report.entries] == [
        "AAA/@row_sum.ttgir",
        "BBB/row_sum.ttgir",
        "CCC/nometa.ttgir",
        "DDD/badmeta.ttgir",
    ]
    assert report.method == "stripped"
    assert report.triton_version == "3.6.0"
    first = report.entries[0]
    assert (first.kernel, first.method, first.convert_layout) == ("row_sum", "stripped", 1)
    assert (first.num_warps, first.num_stages, first.num_ctas) == (4, 3, 1)
    assert first.hash == text_hash(strip_locations(make_ir(op="arith.maxnumf")))
    for entry in report.entries[2:]:
        assert (entry.num_warps, entry.num_stages, entry.num_ctas) == (None, None, None)
    fp = report.fingerprint()
    assert list(fp) == ["badmeta", "nometa", "row_sum"]
    assert len(fp["row_sum"]) == 2
    assert fp["row_sum"] == sorted(fp["row_sum"])
    assert report.convert_layout_total() == 4


def test_scan_cache_skips_tmp_directories_only(tmp_path):
    write_artifact(tmp_path, "tmp.pid_1_0123", "k", make_ir())
    assert scan_cache(tmp_path).entries == ()
    write_artifact(tmp_path, "ZZZ", "k", make_ir())
    assert [e.path for e in scan_cache(tmp_path).entries] == ["ZZZ/k.ttgir"]


def test_scan_cache_with_nodebug(tmp_path):
    write_artifact(tmp_path, "A", "k1", make_ir())
    write_artifact(tmp_path, "B", "k2", make_ir())
    calls = []

    def nodebug(path):
        calls.append(path)
        return "module {\n  ttg.convert_layout\n}\n"

    report = scan_cache(tmp_path, nodebug)
    assert report.method == "nodebug"
    assert {e.method for e in report.entries} == {"nodebug"}
    assert report.entries[0].hash == text_hash("module {\n  ttg.convert_layout\n}\n")
    assert report.convert_layout_total() == 2
    assert sorted(calls) == [str(tmp_path / "A" / "k1.ttgir"), str(tmp_path / "B" / "k2.ttgir")]

    mixed = scan_cache(tmp_path, lambda p: None if p.endswith("k2.ttgir") else "x")
    assert [e.method for e in mixed.entries] == ["nodebug", "stripped"]
    assert mixed.method == "mixed"
    assert scan_cache(tmp_path, lambda p: None).method == "stripped"
    assert scan_cache(tmp_path / "empty", lambda p: "x").method == "nodebug"


def test_scan_cache_unreadable_file(tmp_path):
    (tmp_path / "H").mkdir()
    (tmp_path / "H" / "k.ttgir").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValueError, match=r"k\.ttgir") as info:
        scan_cache(tmp_path)
    assert "\n" not in str(info.value)


def test_scan_cache_explicit_version(tmp_path):
    write_artifact(tmp_path, "A", "k", make_ir())
    assert scan_cache(tmp_path, triton_version="3.5.1").triton_version == "3.5.1"
    write_artifact(tmp_path, "B", "k", make_ir(), meta=dict(META, triton_version="3.5.0"))
    assert scan_cache(tmp_path).triton_version == "3.5.0,3.6.0"


# -- ir.json -----------------------------------------------------------------------------------


def entry(
    kernel: str, digest: str, method: str = "stripped", cl: int = 0, path: str = ""
) -> IrEntry:
    return IrEntry(path or f"H/{kernel}.ttgir", kernel, digest, method, cl, 4, 3, 1)


def report(*entries: IrEntry, method: str = "stripped", version: str | None = "3.6.0") -> IrReport:
    return IrReport(tuple(entries), method, version)


def test_ir_json_round_trip(tmp_path):
    r = report(
        entry("k", "h2", cl=2),
        entry("k", "h1"),
        IrEntry("X/j.ttgir", "j", "h3", "stripped", 0, None, None, None),
    )
    data = r.to_json()
    assert list(data) == ["schema", "method", "triton_version", "entries", "fingerprint"]
    assert data["schema"] == 1
    assert data["fingerprint"] == {"j": ["h3"], "k": ["h1", "h2"]}
    assert IrReport.from_json(json.loads(json.dumps(data))) == r
    path = tmp_path / "ir.json"
    r.write(path)
    assert IrReport.read(path) == r
    assert not [p for p in tmp_path.iterdir() if p.name != "ir.json"]  # no temp file left


def test_ir_json_real_scan_round_trip(tmp_path):
    write_artifact(tmp_path / "cache", "A", "k", make_ir())
    r = scan_cache(tmp_path / "cache")
    r.write(tmp_path / "ir.json")
    assert IrReport.read(tmp_path / "ir.json") == r


def good_json() -> dict:
    return report(entry("k", "h1", cl=1)).to_json()


def mutate(**changes):
    data = good_json()
    for key, value in changes.items():
        if key.startswith("entry_"):
            data["entries"][0][key[len("entry_") :]] = value
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([], id="not-an-object"),
        pytest.param(mutate(schema=2), id="schema"),
        pytest.param(mutate(method="sha"), id="method"),
        pytest.param(mutate(method="nodebug"), id="method-disagrees-with-entries"),
        pytest.param(mutate(triton_version=3.6), id="version-type"),
        pytest.param(mutate(entries={"k": 1}), id="entries-not-a-list"),
        pytest.param(mutate(entries=["x"]), id="entry-not-an-object"),
        pytest.param(mutate(entry_hash=None), id="entry-hash"),
        pytest.param(mutate(entry_method="mixed"), id="entry-method"),
        pytest.param(mutate(entry_convert_layout=-1), id="negative-count"),
        pytest.param(mutate(entry_convert_layout=True), id="bool-count"),
        pytest.param(mutate(entry_num_warps="4"), id="num-warps-type"),
        pytest.param(mutate(entry_signature=7), id="signature-type"),
        pytest.param(mutate(fingerprint={"k": ["other"]}), id="fingerprint-mismatch"),
    ],
)
def test_ir_json_malformed(data):
    with pytest.raises(ValueError) as info:
        IrReport.from_json(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("content", [None, "", "{", '"just a string"', "\xff"])
def test_ir_json_read_malformed_file(tmp_path, content):
    path = tmp_path / "ir.json"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ValueError, match=r"ir\.json") as info:
        IrReport.read(path)
    assert "\n" not in str(info.value)


# -- compare -----------------------------------------------------------------------------------


def test_compare_identical_despite_order_and_paths():
    a = report(entry("k", "h1", path="AAA/k.ttgir"), entry("k", "h2"), entry("j", "h3", cl=1))
    b = report(entry("j", "h3", cl=1), entry("k", "h2", path="ZZZ/k.ttgir"), entry("k", "h1"))
    assert compare(a, b) == IrDiff(2, 2, (), 1, 1)
    assert not compare(a, b).changed


def test_compare_changed_variant():
    a = report(entry("k", "h1"), entry("k", "h2"), entry("j", "h3"))
    b = report(entry("k", "h1"), entry("k", "h9", cl=3), entry("j", "h3"))
    diff = compare(a, b)
    assert diff.changed
    assert diff.kernels_changed == ("k",)
    assert (diff.convert_layout_a, diff.convert_layout_b) == (0, 3)


def test_compare_changed_variant_set():
    a = report(entry("k", "h1"))
    assert compare(a, report(entry("k", "h1"), entry("k", "h2"))).kernels_changed == ("k",)
    # a multiset: the same hash twice is not the same as once
    assert compare(a, report(entry("k", "h1"), entry("k", "h1"))).kernels_changed == ("k",)


def test_compare_kernel_on_one_side_only():
    a = report(entry("k", "h1"), entry("only_a", "h2"))
    b = report(entry("k", "h1"), entry("only_b", "h3"), entry("zz", "h4"))
    diff = compare(a, b)
    assert diff.kernels_changed == ("only_a", "only_b", "zz")
    assert (diff.kernels_a, diff.kernels_b) == (2, 3)
    assert compare(report(), report()) == IrDiff(0, 0, (), 0, 0)


def test_compare_refuses_incomparable_reports():
    stripped = report(entry("k", "h1"))
    nodebug = report(entry("k", "h1", method="nodebug"), method="nodebug")
    mixed = report(entry("k", "h1"), entry("j", "h2", method="nodebug"), method="mixed")
    with pytest.raises(ValueError, match="method"):
        compare(stripped, nodebug)
    with pytest.raises(ValueError, match="mixes"):
        compare(mixed, mixed)
    with pytest.raises(ValueError, match="Triton version"):
        compare(stripped, report(entry("k", "h1"), version="3.5.0"))
    # an unknown version on one side is not a refusal
    assert not compare(stripped, report(entry("k", "h1"), version=None)).changed


def test_core_module_imports_nothing_heavy():
    code = (
        "import sys, pytest_zlbench.core.fingerprint\n"
        "bad = {'pytest', '_pytest', 'torch', 'triton', 'flag_gems'} & set(sys.modules)\n"
        "print(sorted(bad))\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {src!r})\n" + code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
