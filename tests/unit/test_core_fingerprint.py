from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench.core.fingerprint import (
    IrDiff,
    IrEntry,
    IrReport,
    StageDiff,
    compare,
    compare_stages,
    count_convert_layout,
    kernel_name,
    scan_cache,
    strip_locations,
    text_hash,
)
from pytest_zlbench.core.ir_stages import STAGE_NAMES, hash_stages, stage_order
from pytest_zlbench.core.ir_text import elf_digest, normalise_asm, normalise_llvm_ir

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


def test_a_report_that_names_a_kernel_of_unknown_ir_is_not_compared():
    """ir.json's ``unknown``: kernels a run launched whose IR it could not take (loaded before
    its recorder, or compiled for another side of a one-process worker): identical entries
    then prove nothing."""
    clean = report(entry("k", "h1"))
    leaky = IrReport(
        clean.entries, clean.method, clean.triton_version, (("mm", "compiled elsewhere"),)
    )
    data = json.loads(json.dumps(leaky.to_json()))
    assert data["unknown"] == [{"kernel": "mm", "reason": "compiled elsewhere"}]
    assert IrReport.from_json(data) == leaky
    assert "unknown" not in clean.to_json()
    with pytest.raises(
        ValueError, match=r"B launched a kernel of unknown IR: mm \(compiled elsewhere\)"
    ):
        compare(clean, leaky)
    with pytest.raises(ValueError, match=r"A launched a kernel of unknown IR: mm"):
        compare(leaky, clean)
    with pytest.raises(ValueError, match="unknown"):
        IrReport.from_json({**data, "unknown": [{"kernel": "mm"}]})


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


# -- lower stages: normalisers --------------------------------------------------------------------

# Shaped like Triton 3.6's .llir: debug info holds the kernel file's directory and line numbers,
# a loop's metadata refers to DILocations, and metadata numbers follow the debug nodes.
LLIR = """\
; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"

; Function Attrs: nounwind
define ptx_kernel void @k(ptr addrspace(1) %0, i32 %1) local_unnamed_addr #0 !dbg !4 {{
  %3 = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !7
  %4 = {op} i32 %3, %1, !dbg !8
  tail call void asm sideeffect "st.b32 [ $1 ], $0; // !9", "r,l"(i32 %4, ptr %0), !dbg !8
  br label %5, !llvm.loop !{loop}

5:                                                ; preds = %2
  ret void, !dbg !9
}}

attributes #0 = {{ nounwind "nvvm.reqntid"="128" }}

!llvm.dbg.cu = !{{!0}}
!llvm.module.flags = !{{!2, !3}}

!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, producer: "triton")
!1 = !DIFile(filename: "kernels.py", directory: "{dir}")
!2 = !{{i32 2, !"Debug Info Version", i32 3}}
!3 = !{{i32 4, !"nvvm-reflect-ftz", i32 1}}
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: {line}, unit: !0)
!7 = !DILocation(line: {line}, column: 24, scope: !4)
!8 = !DILocation(line: 16, column: 20, scope: !4)
!9 = !DILocation(line: 17, column: 4, scope: !4)
{extra}!{loop} = distinct !{{!{loop}, !7, !9, !{unroll}}}
!{unroll} = !{{!"llvm.loop.unroll.disable"}}
"""


def make_llir(op="add", dir="/a/src", line=14, extra="", loop=10, unroll=11):
    return LLIR.format(op=op, dir=dir, line=line, extra=extra, loop=loop, unroll=unroll)


def test_llvm_ir_normalisation_drops_debug_info():
    out = normalise_llvm_ir(make_llir())
    for gone in ("!dbg", "DI", "/a/src", "Debug Info Version", "ModuleID", "; preds", "Attrs"):
        assert gone not in out, gone
    assert "#0 {\n" in out
    assert "!llvm.module.flags = !{!0}\n" in out  # the debug-version flag is gone, !3 renumbered
    assert '!0 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n' in out
    # the loop node keeps its self-reference and its unroll hint; its DILocations are dropped
    assert "!1 = distinct !{!1, !2}\n" in out
    assert '!2 = !{!"llvm.loop.unroll.disable"}\n' in out
    assert "// !9" in out  # strings (inline asm) are left alone


def test_llvm_ir_hash_ignores_paths_lines_and_metadata_numbering():
    base = normalise_llvm_ir(make_llir())
    assert normalise_llvm_ir(make_llir(dir="/b/elsewhere/deeper", line=15)) == base
    # an extra debug node shifts every later metadata number
    extra = "!20 = !DILocation(line: 1, column: 1, scope: !4)\n"
    assert normalise_llvm_ir(make_llir(extra=extra, loop=21, unroll=22)) == base
    assert normalise_llvm_ir(make_llir(op="mul")) != base


PTX = """\
//
// Generated by LLVM NVPTX Back-End
//

.version 8.7
.target sm_90a
.address_size 64

\t// .globl\tk                       // -- Begin function k
.visible .entry k(
\t.param .u64 .ptr .global .align 1 k_param_0
)
{{
\t.reg .b32 \t%r<4>;
\t.loc\t1 {line} 0                          // kernels.py:{line}:0
$L__func_begin0:
$L__tmp0:
\t.loc\t1 15 24                         // kernels.py:15:24
\tmov.u32 \t%r1, %tid.x;
\t{op} \t%r2, %r1, %r1;
\tret;
$L__tmp1:
$L__func_end0:
}}
\t.file\t1 "{dir}/kernels.py"
\t.section\t.debug_abbrev
\t{{
.b8 1                                   // Abbreviation Code
\t}}
\t.section\t.debug_info
\t{{
.b32 {size}                                 // Length of Unit
.b8 {byte}
\t}}
\t.section\t.debug_macinfo\t{{\t}}
"""


def make_ptx(op="add.s32", dir="/a/src", line=14, size=54, byte=97):
    return PTX.format(op=op, dir=dir, line=line, size=size, byte=byte)


def test_ptx_normalisation_drops_debug_info():
    out = normalise_asm(make_ptx(), "//")
    for gone in ("//", ".loc", ".file", "/a/src", ".section", ".b8", "$L__tmp", "Generated"):
        assert gone not in out, gone
    assert "add.s32 %r2, %r1, %r1;\n" in out
    assert out.endswith("$L__func_end0:\n}\n")
    assert normalise_asm(make_ptx(dir="/b/elsewhere", line=20, size=60, byte=98), "//") == out
    assert normalise_asm(make_ptx(op="add.rn.f32"), "//") != out


AMDGCN = """\
\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
\t.text
add_kernel:                             ; @add_kernel
.Lfunc_begin0:
\t.cfi_startproc
\t.file\t1 "{dir}" "kernels.py"
\t.loc\t1 14 0 prologue_end             ; kernels.py:14:0
.Ltmp0:
\t{op} v0, v1, v2
\t.section\t.debug_str,"MS",@progbits,1
\t.asciz\t"{dir}"                ; string offset=25
\t.section\t".note.GNU-stack","",@progbits
\t.amdgpu_metadata
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
\t.end_amdgpu_metadata
\t.section\t.debug_line,"",@progbits
.Lline_table_start0:
"""


def test_amdgcn_normalisation_drops_debug_sections_to_the_next_section():
    out = normalise_asm(AMDGCN.format(dir="/a/src", op="v_add_u32_e32"), ";")
    assert out == (
        '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\nadd_kernel:\n.Lfunc_begin0:\n'
        "v_add_u32_e32 v0, v1, v2\n"
        '.section ".note.GNU-stack","",@progbits\n.amdgpu_metadata\n'
        "amdhsa.target: amdgcn-amd-amdhsa--gfx942\n.end_amdgpu_metadata\n"
    )
    assert normalise_asm(AMDGCN.format(dir="/b/x", op="v_add_u32_e32"), ";") == out


def make_elf(sections: list[tuple[str, int, int, bytes]]) -> bytes:
    """A minimal ELF64 LE file: header, section bodies, .shstrtab, section headers."""
    names = b"\0"
    offsets = []
    for name, *_ in sections:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    body = b""
    layout = []
    for _name, kind, _flags, data in sections:
        layout.append((64 + len(body), len(data)))
        body += b"" if kind == 8 else data
    shstr_at = 64 + len(body)
    shoff = shstr_at + len(names)
    heads = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    for name_off, (_n, kind, flags, _d), (at, size) in zip(offsets, sections, layout, strict=True):
        heads.append(struct.pack("<IIQQQQIIQQ", name_off, kind, flags, 0, at, size, 0, 0, 1, 0))
    shst_name = len(names)
    names += b".shstrtab\0"
    shoff = shstr_at + len(names)
    heads.append(struct.pack("<IIQQQQIIQQ", shst_name, 3, 0, 0, shstr_at, len(names), 0, 0, 1, 0))
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH",
        ident,
        2,
        190,
        1,
        0,
        0,
        shoff,
        0,
        64,
        0,
        0,
        64,
        len(heads),
        len(heads) - 1,
    )
    return header + body + names + b"".join(heads)


def cubin(text: bytes = b"\x01\x02", line_table: bytes = b"/a/src", shared: int = 0) -> bytes:
    return make_elf(
        [
            (".debug_line", 1, 0, line_table),
            (".nv_debug_ptx_txt", 1, 0, line_table * 2),
            (".rela.debug_line", 4, 0x40, line_table[:3]),
            (".text.k", 1, 6, text),
            (".nv.shared.k", 8, 3, bytes(shared)),
        ]
    )


def test_elf_digest_ignores_debug_sections_only():
    base = elf_digest(cubin())
    assert base is not None
    assert elf_digest(cubin(line_table=b"/b/elsewhere/deeper")) == base
    assert elf_digest(cubin(text=b"\x01\x03")) != base
    assert elf_digest(cubin(shared=1024)) != base  # a NOBITS section's size counts
    assert elf_digest(b"not an elf") is None
    assert elf_digest(cubin()[:100]) is None  # truncated: never hashed raw
    assert elf_digest(b"\x7fELF\x01\x01" + bytes(60)) is None  # 32-bit


# -- lower stages: scan_cache and ir.json ------------------------------------------------------


def write_stages(root: Path, hash_dir: str, name: str, op: str = "add.s32", **paths: str) -> Path:
    d = root / hash_dir
    write_artifact(root, hash_dir, name, make_ir(src=paths.get("dir", "/a/src") + "/k.py"))
    (d / f"{name}.ttir").write_text(make_ir(src=paths.get("dir", "/a/src") + "/k.py"))
    (d / f"{name}.llir").write_text(make_llir(dir=paths.get("dir", "/a/src")))
    (d / f"{name}.ptx").write_text(make_ptx(op=op, dir=paths.get("dir", "/a/src")))
    (d / f"{name}.cubin").write_bytes(cubin(line_table=paths.get("dir", "/a/src").encode()))
    return d / f"{name}.ttgir"


def test_scan_cache_hashes_every_stage_in_compile_order(tmp_path):
    write_stages(tmp_path / "a", "AAA", "k")
    write_stages(tmp_path / "b", "BBB", "k", dir="/b/elsewhere")
    (tmp_path / "a" / "AAA" / "k.hsaco").write_bytes(b"not an elf")  # unparseable: left out
    a, b = scan_cache(tmp_path / "a"), scan_cache(tmp_path / "b")
    (entry_a,) = a.entries
    # the metadata .json beside them gives the launch stage, last
    assert [s for s, _ in entry_a.stages] == ["ttir", "ttgir", "llir", "ptx", "cubin", "launch"]
    assert dict(entry_a.stages)["ttgir"] == entry_a.hash
    assert entry_a.stages == b.entries[0].stages
    written = json.loads(json.dumps(a.to_json()))
    assert list(written["entries"][0]["stages"]) == [
        "ttir", "ttgir", "llir", "ptx", "cubin", "launch"
    ]  # fmt: skip
    assert IrReport.from_json(written) == a


def test_hash_stages_never_mixes_methods_within_an_entry(tmp_path):
    path = write_stages(tmp_path, "A", "k")
    method, text, hashes = hash_stages(path, path.read_text(), lambda p: "x")
    assert (method, text) == ("nodebug", "x")
    assert hashes["ttir"] == hashes["ttgir"] == text_hash("x")
    # the parser fails on the TTIR only: both MLIR stages fall back to location stripping
    method, text, hashes = hash_stages(
        path, path.read_text(), lambda p: None if p.endswith(".ttir") else "x"
    )
    assert method == "stripped"
    assert hashes["ttgir"] == text_hash(strip_locations(path.read_text()))


def test_old_ir_json_entries_read_as_ttgir_only():
    old = entry("k", "h1").to_json()
    assert "stages" not in old
    assert IrEntry.from_json(old).stages is None
    new = IrEntry.from_json(old | {"stages": {"ptx": "p", "ttgir": "h1", "future": "f"}})
    assert new.stages == (("ttgir", "h1"), ("ptx", "p"), ("future", "f"))  # compile order


@pytest.mark.parametrize(
    "stages",
    [[], {"ttgir": 1}, {"ttgir": "other than the entry's hash"}, "ttgir"],
)
def test_ir_json_malformed_stages(stages):
    with pytest.raises(ValueError, match="stages") as info:
        IrEntry.from_json(entry("k", "h1").to_json() | {"stages": stages})
    assert "\n" not in str(info.value)


def test_stage_order():
    assert stage_order(["cubin", "zz", "ptx", "source", "ttir", "aa"]) == [
        "source",
        "ttir",
        "ptx",
        "cubin",
        "aa",
        "zz",
    ]
    assert STAGE_NAMES.index("ttir") < STAGE_NAMES.index("ttgir") < STAGE_NAMES.index("llir")


# -- lower stages: comparison --------------------------------------------------------------------


def staged(kernel: str, **hashes: str) -> IrEntry:
    stages = {"ttir": "r", "ttgir": "g", "llir": "l", "ptx": "p", "cubin": "c"} | hashes
    order = tuple((s, stages[s]) for s in stage_order(stages))
    return IrEntry(f"H/{kernel}.ttgir", kernel, stages["ttgir"], "stripped", 0, stages=order)


def test_compare_stages_identical():
    a = report(staged("k"), staged("j", ptx="p2"))
    diff = compare_stages(a, report(staged("j", ptx="p2"), staged("k")))
    assert diff == StageDiff(("ttir", "ttgir", "llir", "ptx", "cubin"), None, ())
    assert diff.identical
    assert diff.complete
    assert diff.describe() == "IR identical at ttir, ttgir, llir, ptx, cubin"


def test_compare_stages_names_the_first_differing_stage():
    a = report(staged("k"), staged("j"), staged("m"))
    b = report(staged("k", llir="L", ptx="P", cubin="C"), staged("j", cubin="C"), staged("m"))
    diff = compare_stages(a, b)
    assert not diff.identical
    assert diff.complete
    assert (diff.first, diff.kernels) == ("llir", ("k",))
    assert diff.changed == (("llir", ("k",)), ("ptx", ("k",)), ("cubin", ("j", "k")))
    assert diff.kernels_at("cubin") == ("j", "k")
    assert diff.kernels_at("ttir") == ()
    assert diff.describe() == "IR first differs at llir (k); ttir, ttgir identical"
    # the TTGIR summary of compare() sees nothing; its stages field does
    full = compare(a, b)
    assert not full.changed
    assert full.stages == diff


def test_compare_stages_multiset_and_one_sided_kernels():
    a = report(staged("k", ptx="p1"), staged("k", ptx="p2"))
    b = report(staged("k", ptx="p2"), staged("k", ptx="p1"), staged("new"))
    diff = compare_stages(a, b)
    assert (diff.first, diff.kernels) == ("ttir", ("new",))  # absent on one side: every stage
    assert all(kernels == ("new",) for _, kernels in diff.changed)
    same_twice = compare_stages(report(staged("k")), report(staged("k"), staged("k")))
    assert same_twice.first == "ttir"


def test_compare_stages_reports_what_was_not_compared():
    a = report(staged("k"), staged("j"))
    no_cubin = IrEntry("H/j.ttgir", "j", "g", "stripped", 0, stages=(("ttir", "r"), ("ttgir", "g")))
    diff = compare_stages(a, report(staged("k"), no_cubin))
    assert diff.compared == ("ttir", "ttgir")
    assert diff.not_compared == ("llir", "ptx", "cubin")
    assert diff.identical
    assert not diff.complete
    assert diff.describe() == "IR identical at ttir, ttgir; not compared: llir, ptx, cubin"


def test_compare_stages_with_an_old_ttgir_only_record():
    old = report(entry("k", "g"))
    diff = compare_stages(old, report(staged("k")))
    assert (diff.compared, diff.ttgir_only, diff.identical, diff.complete) == (
        ("ttgir",),
        True,
        True,
        False,
    )
    assert diff.describe() == (
        "IR identical at ttgir; a run recorded TTGIR only, later stages not compared"
    )
    changed = compare_stages(old, report(staged("k", ttgir="G")))
    assert (changed.first, changed.kernels) == ("ttgir", ("k",))
    assert compare_stages(report(), report()).describe() == "no IR"


def test_compare_stages_refuses_incomparable_reports():
    with pytest.raises(ValueError, match="method"):
        compare_stages(report(staged("k")), report(method="nodebug"))
