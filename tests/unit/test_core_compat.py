"""``core.compat``: override files, stale detection, the collection report, the dismiss list."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core import compat, inventory
from pytest_zlbench.core.backends import BackendRegistry

GOOD = """
schema: 1
backend: musa
flaggems: v5.3.4
overrides:
  - file: test_a.py
    reason: "CUDA required"
    source: reasoned
    why: runs on flag_gems.device
  - file: sub/test_b.py
    reason: "CUDA device required"
    source: probed
    why: seen passing on a card
keep:
  - file: test_a.py
    reason: "requires NVIDIA Hopper architecture"
    source: reasoned
    why: Hopper-only kernel
"""


def rules(text: str = GOOD) -> compat.CompatRules:
    return compat.parse_rules(textwrap.dedent(text), "musa.yaml", backend="musa")


def test_parse_good_file() -> None:
    r = rules()
    assert r.backend == "musa"
    assert r.flaggems == "v5.3.4"
    assert [(e.kind, e.file, e.source) for e in r.overrides] == [
        ("override", "test_a.py", "reasoned"),
        ("override", "sub/test_b.py", "probed"),
    ]
    assert r.keep[0].kind == "keep"
    assert r.lift_reasons("test_a.py") == {"CUDA required"}
    assert r.lift_reasons("sub/test_b.py") == {"CUDA device required"}
    assert r.lift_reasons("test_c.py") == frozenset()
    assert r.kept("test_a.py", "requires NVIDIA Hopper architecture")
    assert not r.kept("test_a.py", "CUDA required")
    assert r.files() == ("test_a.py", "sub/test_b.py")


def test_reasons_are_exact() -> None:
    r = rules()
    assert "CUDA required " not in r.lift_reasons("test_a.py")
    assert "cuda required" not in r.lift_reasons("test_a.py")


def test_empty_lists_are_allowed() -> None:
    r = rules("schema: 1\nbackend: musa\nflaggems: v5.3.4\noverrides: []\n")
    assert r.overrides == ()
    assert r.keep == ()


ENTRY = "  - file: test_a.py\n    reason: x\n    source: reasoned\n    why: y\n"
HEAD = "schema: 1\nbackend: musa\nflaggems: v5.3.4\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "expected a mapping"),
        ("- a\n", "expected a mapping"),
        ("schema: [\n", "not valid YAML (line"),
        ("schema: 2\nbackend: musa\nflaggems: v\n", "schema must be 1"),
        ("backend: musa\nflaggems: v\n", "schema must be 1"),
        ("schema: 1\nflaggems: v\n", "'backend' must be a non-empty string"),
        ("schema: 1\nbackend: cuda\nflaggems: v\n", "does not match the file name"),
        ("schema: 1\nbackend: musa\n", "'flaggems' must be a non-empty string"),
        (HEAD + "extra: 1\n", "unknown key 'extra'"),
        (HEAD + "overrides: {}\n", "'overrides' must be a list"),
        (HEAD + "overrides:\n  - just a string\n", "overrides[0]: expected a mapping"),
        (HEAD + "overrides:\n" + ENTRY + "    tests: [a]\n", "unknown key 'tests'"),
        (HEAD + "overrides:\n  - file: test_a.py\n    reason: x\n    why: y\n", "missing 'source'"),
        (HEAD + "overrides:\n" + ENTRY.replace("reasoned", "guessed"), "not one of reasoned"),
        (HEAD + "overrides:\n" + ENTRY.replace("reason: x", "reason: ''"), "exact, non-empty"),
        (HEAD + "overrides:\n" + ENTRY.replace("reason: x", "reason: 3"), "exact, non-empty"),
        (HEAD + "overrides:\n" + ENTRY.replace("why: y", "why: ''"), "'why' must be"),
        (HEAD + "overrides:\n" + ENTRY.replace("test_a.py", "/abs/test_a.py"), "relative"),
        (HEAD + "overrides:\n" + ENTRY.replace("test_a.py", "../test_a.py"), "relative"),
        (HEAD + "overrides:\n" + ENTRY.replace("test_a.py", "test_a.txt"), "relative"),
        (HEAD + "overrides:\n" + ENTRY.replace("test_a.py", "a\\\\test_a.py"), "relative"),
        (HEAD + "overrides:\n" + ENTRY + ENTRY, "is listed twice"),
        (HEAD + "overrides:\n" + ENTRY + "keep:\n" + ENTRY, "as both override and keep"),
    ],
)
def test_malformed_files_are_one_line_errors(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        compat.parse_rules(text, "musa.yaml", backend="musa")
    message = str(excinfo.value)
    assert needle in message
    assert message.startswith("musa.yaml")
    assert "\n" not in message


def test_load_rules(tmp_path: Path) -> None:
    assert compat.load_rules(()) is None
    (tmp_path / "musa.yaml").write_text(GOOD)
    loaded = compat.load_rules(("musa",), tmp_path)
    assert loaded is not None
    assert len(loaded.overrides) == 2
    with pytest.raises(ValueError, match="cannot read"):
        compat.load_rules(("ascend",), tmp_path)


def test_load_rules_merges_several_files(tmp_path: Path) -> None:
    (tmp_path / "musa.yaml").write_text(GOOD)
    (tmp_path / "extra.yaml").write_text(HEAD.replace("musa", "extra") + "overrides:\n" + ENTRY)
    merged = compat.load_rules(("musa", "extra"), tmp_path)
    assert merged is not None
    assert len(merged.overrides) == 3
    assert merged.lift_reasons("test_a.py") == {"CUDA required", "x"}


def test_only_musa_has_override_data() -> None:
    """Overrides never leak: the backend registry names ops/compat files for musa alone."""
    registry = BackendRegistry()
    assert {name: registry.resolve(name).compat for name in registry.names()} == {
        "cuda": (),
        "musa": ("musa",),
        "rocm": (),
        "ascend": (),
        "cpu": (),
    }
    assert registry.resolve("musa").vendor == "mthreads"
    for name in registry.names():
        for file in registry.resolve(name).compat:
            assert (compat.COMPAT_DIR / f"{file}.yaml").is_file()


def test_packaged_musa_file() -> None:
    r = compat.load_rules(("musa",))
    assert r is not None
    assert r.backend == "musa"
    assert r.flaggems == "v5.3.4"
    assert len(r.overrides) == 3
    assert len(r.keep) == 41
    assert {e.source for e in r.overrides + r.keep} == {"reasoned"}
    assert r.kept("test_fft.py", "CUDA is not available")
    assert r.lift_reasons("test_top_k_per_row_prefill.py") == {"CUDA device required"}


# --------------------------------------------------------------------------------------------
# stale overrides and the report


def test_stale_overrides() -> None:
    r = rules()
    found = {"test_a.py": {"CUDA required", "other"}, "sub/test_b.py": {"CUDA device needed"}}
    stale = compat.stale_overrides(r, found)
    assert [(s.entry.file, s.problem) for s in stale] == [
        ("sub/test_b.py", "no skip guard in that file has this reason")
    ]
    stale = compat.stale_overrides(r, {"test_a.py": None})
    assert [s.entry.file for s in stale] == ["test_a.py", "sub/test_b.py"]
    assert all(s.problem == "file absent from the benchmark directory" for s in stale)
    assert stale[0].line() == (
        "stale override test_a.py 'CUDA required': file absent from the benchmark directory"
    )
    assert (
        compat.stale_overrides(
            r, {"test_a.py": ["CUDA required"], "sub/test_b.py": ["CUDA device required"]}
        )
        == []
    )


def test_summary_lines() -> None:
    r = rules()
    stale = compat.stale_overrides(r, {"test_a.py": {"CUDA required"}})
    lines = compat.summary_lines(r, "mthreads", 4, 3, 1, stale)
    assert lines == [
        "zlbench compat: musa overrides active (flag_gems.vendor_name=mthreads): lifted 4 skips "
        "(3 guards removed); 1 still skipped by kept guards",
        "zlbench compat: stale override sub/test_b.py 'CUDA device required': file absent from "
        "the benchmark directory",
    ]
    assert compat.summary_lines(r, "mthreads", 1, 1, 0, []) == [
        "zlbench compat: musa overrides active (flag_gems.vendor_name=mthreads): lifted 1 skip "
        "(1 guard removed)"
    ]


# --------------------------------------------------------------------------------------------
# dismiss list

DISMISS = """
schema: 1
dismissed:
  fft:
    reason: "AssertionError: input must be on CUDA"
    date: 2026-08-25
    card: NVIDIA H200
  mm:
    reason: "RuntimeError: out of resource"
    date: "2026-08-26"
    card: NVIDIA H200
    note: only with --level comprehensive
"""


def test_load_dismiss() -> None:
    assert compat.load_dismiss(DISMISS) == {
        "fft": "AssertionError: input must be on CUDA",
        "mm": "RuntimeError: out of resource",
    }
    assert compat.load_dismiss("") == {}
    assert compat.load_dismiss("schema: 1\ndismissed: {}\n") == {}
    assert compat.load_dismiss("schema: 1\n") == {}


D = "schema: 1\ndismissed:\n  fft:\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("- fft\n", "expected a mapping"),
        ("schema: 2\ndismissed: {}\n", "schema must be 1"),
        ("schema: 1\nops: {}\n", "unknown key 'ops'"),
        ("schema: 1\ndismissed: [fft]\n", "must map operator ids"),
        (D + "    reason: x\n    date: 2026-08-25\n", "'card' must be"),
        (D + "    date: 2026-08-25\n    card: H200\n", "'reason' must be"),
        (D + "    reason: x\n    card: H200\n", "'date' must be YYYY-MM-DD"),
        (D + "    reason: x\n    date: yesterday\n    card: H200\n", "'date' must be YYYY-MM-DD"),
        (D + "    reason: x\n    date: 2026-08-25\n    card: H200\n    by: me\n", "unknown key"),
        ("schema: 1\ndismissed:\n  fft: skipped\n", "expected a mapping with reason"),
        ("schema: 1\ndismissed:\n  3: {}\n", "operator id 3"),
        ("dismissed: [\n", "not valid YAML"),
        (
            D + "    reason: x\n    date: 2026-08-25\n    card: H200\n    while_missing: vllm\n",
            "list of top-level module names",
        ),
        (
            D + "    reason: x\n    date: 2026-08-25\n    card: H200\n    while_missing: []\n",
            "list of top-level module names",
        ),
        (
            D
            + "    reason: x\n    date: 2026-08-25\n    card: H200\n"
            + "    while_missing: [vllm.ops]\n",
            "list of top-level module names",
        ),
        (
            D + "    reason: x\n    date: 2026-08-25\n    card: H200\n    while_missing:\n",
            "list of top-level module names",
        ),
        (
            D
            + "    reason: x\n    date: 2026-08-25\n    card: H200\n"
            + '    while_missing: ["vllm\\n"]\n',
            "list of top-level module names",
        ),
    ],
)
def test_malformed_dismiss_is_a_one_line_error(text: str, needle: str) -> None:
    assert_one_line_error(compat.load_dismiss, text, "dismiss.yaml", needle)


def assert_one_line_error(load: Any, text: str, source: str, needle: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        load(text, source)
    assert needle in str(excinfo.value)
    assert str(excinfo.value).startswith(source)
    assert "\n" not in str(excinfo.value)


MISSING = """
schema: 1
dismissed:
  fused_marlin_moe:
    reason: "vllm not installed; baseline unavailable"
    date: 2026-11-29
    card: NVIDIA H200
    while_missing: [vllm]
  fp8_mqa_logits:
    reason: "requires vLLM with DeepGEMM support"
    date: 2026-11-29
    card: NVIDIA H200
    while_missing: [vllm, deep_gemm]
"""


def test_a_missing_package_dismisses_only_while_it_is_missing() -> None:
    """A skip for a package the lent machine lacked is not the card's: on a machine with the
    package the operator is screened; without it, the reason names what is missing."""
    assert compat.load_dismiss(MISSING, present=lambda m: True) == {}
    assert compat.load_dismiss(MISSING, present=lambda m: m == "vllm") == {
        "fp8_mqa_logits": "requires vLLM with DeepGEMM support (while deep_gemm cannot be imported)"
    }
    assert compat.load_dismiss(MISSING, present=lambda m: False)["fused_marlin_moe"] == (
        "vllm not installed; baseline unavailable (while vllm cannot be imported)"
    )


def test_importable_checks_without_importing() -> None:
    assert compat.importable("json")
    assert not compat.importable("zlbench_no_such_module")


def test_dismissed(tmp_path: Path) -> None:
    path = tmp_path / "dismiss.yaml"
    path.write_text(DISMISS)
    assert compat.dismissed("fft", path) == "AssertionError: input must be on CUDA"
    assert compat.dismissed("abs", path) is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: 3\n")
    with pytest.raises(ValueError, match="schema must be 1"):
        compat.dismissed("fft", bad)


def test_packaged_dismiss_list() -> None:
    """Verified on the H200 (2026-11-29/30), each with the card's exact text: 9 entries hold
    everywhere, 44 only while vLLM, DeepGEMM or TransformerEngine is missing; the inventory
    knows every dismissed op id; ordinary operators are not dismissed."""
    text = compat.DISMISS_PATH.read_text()
    everywhere = compat.load_dismiss(text, present=lambda m: True)
    assert set(everywhere) == {
        "chunk_gated_delta_rule",
        "chunk_gated_delta_rule_fwd",
        "hadamard_transform_mn",
        "isneginf_out",
        "scaled_dot_product_cudnn_attention_backward",
        "signbit_out",
        "sparse_attention",
        "upsample_bicubic2d",
        "upsample_bicubic2d_aa_backward",
    }
    table = compat.load_dismiss(text, present=lambda m: False)
    assert len(table) == 53
    assert table["fused_marlin_moe"] == (
        "vllm not installed; baseline unavailable (while vllm cannot be imported)"
    )
    assert compat.dismissed("sparse_attention") == (
        "sparse_attention benchmark requires mthreads sparse_attention baseline"
    )
    assert compat.dismissed("fft") is None
    rows = inventory.parse_tsv((compat.OPS_DIR / "inventory.tsv").read_text())
    assert set(table) <= {r.op_id for r in rows}


# --------------------------------------------------------------------------------------------
# no-capture list

NO_CAPTURE = """
schema: 1
no_capture:
  cholesky_solve:
    reason: "MAGMA asserts under capture (SIGABRT)"
    date: 2026-11-30
    card: NVIDIA H200
    note: batched cases only
"""
N = "schema: 1\nno_capture:\n  cholesky_solve:\n"


def test_load_no_capture(tmp_path: Path) -> None:
    assert compat.load_no_capture(NO_CAPTURE) == {
        "cholesky_solve": "MAGMA asserts under capture (SIGABRT)"
    }
    assert compat.load_no_capture("") == {}
    assert compat.load_no_capture("schema: 1\nno_capture: {}\n") == {}
    path = tmp_path / "no_capture.yaml"
    path.write_text(NO_CAPTURE)
    assert compat.no_capture("cholesky_solve", path) == "MAGMA asserts under capture (SIGABRT)"
    assert compat.no_capture("abs", path) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("schema: 1\ndismissed: {}\n", "unknown key 'dismissed'"),
        ("schema: 1\nno_capture: [mm]\n", "must map operator ids"),
        (N + "    reason: x\n    date: 2026-11-30\n", "'card' must be"),
        (N + "    reason: x\n    card: H200\n", "'date' must be YYYY-MM-DD"),
        # a no-capture entry applies everywhere: a capture that aborts is the library's
        (
            N + "    reason: x\n    date: 2026-11-30\n    card: H200\n    while_missing: [x]\n",
            "unknown key",
        ),
    ],
)
def test_malformed_no_capture_is_a_one_line_error(text: str, needle: str) -> None:
    assert_one_line_error(compat.load_no_capture, text, "no_capture.yaml", needle)


def test_packaged_no_capture_list() -> None:
    """Seen on the H200 (docs/VALIDATION.md, "Captures that fail, break or kill"): torch's
    batched cholesky_solve aborts in MAGMA under capture. Both op ids are in the inventory; nothing
    is both timed directly and dismissed."""
    table = compat.load_no_capture(compat.NO_CAPTURE_PATH.read_text())
    assert set(table) == {"cholesky_solve", "cholesky_solve_out"}
    assert all("MAGMA" in reason and "\n" not in reason for reason in table.values())
    rows = inventory.parse_tsv((compat.OPS_DIR / "inventory.tsv").read_text())
    assert set(table) <= {r.op_id for r in rows}
    dismissed = compat.load_dismiss(compat.DISMISS_PATH.read_text(), present=lambda m: False)
    assert not set(table) & set(dismissed)
