"""The ``launch`` stage of an IR fingerprint: each kernel's launch settings, read from the metadata
``.json`` Triton keeps beside its IR (``core.ir_stages.LAUNCH_KEYS``), compared like any stage.

Metadata here is written by hand in the shape Triton 3.6 writes it (``test_triton_stages.py``
checks the same stage on real Triton output).
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_zlbench.core.fingerprint import compare, scan_cache
from pytest_zlbench.core.ir_stages import LAUNCH, LAUNCH_KEYS, launch_digest, launch_settings

TTGIR = 'module attributes {"ttg.num-warps" = 4 : i32} {\n  tt.func public @k() {\n  }\n}\n'

#: a Triton 3.6 metadata file, cut to what matters here
META = {
    "hash": "8932a32178753ceadfbb5df39012781e86125e05277864dfa481dadc12e1fbaf",
    "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
    "num_warps": 4,
    "num_ctas": 1,
    "num_stages": 3,
    "warp_size": 32,
    "maxnreg": None,
    "extern_libs": [["libdevice", "/venv/a/triton/backends/nvidia/lib/libdevice.10.bc"]],
    "triton_version": "3.6.0",
    "shared": 98304,
    "tmem_size": 0,
    "global_scratch_size": 0,
    "global_scratch_align": 1,
    "profile_scratch_size": 0,
    "profile_scratch_align": 1,
    "launch_cooperative_grid": False,
    "launch_pdl": False,
    "name": "k",
}


def cache(root: Path, meta: object = META, name: str = "k", hash_dir: str = "H") -> Path:
    folder = root / hash_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.ttgir").write_text(TTGIR, encoding="utf-8")
    if meta is not None:
        text = meta if isinstance(meta, str) else json.dumps(meta)
        (folder / f"{name}.json").write_text(text, encoding="utf-8")
    return root


def stages(root: Path) -> dict[str, str]:
    (entry,) = scan_cache(root).entries
    assert entry.stages is not None
    return dict(entry.stages)


def test_the_launch_settings_are_the_keys_the_driver_launches_with() -> None:
    settings = launch_settings(META)
    assert settings is not None
    assert set(settings) == set(LAUNCH_KEYS) - {"cluster_dims"}  # 3.6 writes no cluster_dims
    assert settings["shared"] == 98304
    assert "hash" not in settings  # not launch settings
    assert "extern_libs" not in settings
    older = {**META, "cluster_dims": [2, 1, 1]}  # Triton 3.0-3.2 wrote it
    assert launch_settings(older) == {**settings, "cluster_dims": [2, 1, 1]}
    assert launch_settings({"name": "k"}) is None
    assert launch_settings(["num_warps", 4]) is None


def test_the_launch_digest_ignores_what_is_not_a_launch_setting_and_key_order() -> None:
    digest = launch_digest(json.dumps(META).encode())
    assert digest is not None
    moved = {**META, "hash": "0" * 64, "extern_libs": [["libdevice", "/elsewhere/x.bc"]]}
    assert launch_digest(json.dumps(moved).encode()) == digest
    reordered = dict(reversed(list(META.items())))
    assert launch_digest(json.dumps(reordered).encode()) == digest
    for key, value in (("num_warps", 8), ("shared", 65536), ("num_stages", 4)):
        assert launch_digest(json.dumps({**META, key: value}).encode()) != digest, key
    assert launch_digest(b"{not json") is None
    assert launch_digest(b"\xff\xfe") is None
    assert launch_digest(b'{"name": "k"}') is None


def test_an_entry_records_its_launch_stage_last(tmp_path: Path) -> None:
    recorded = stages(cache(tmp_path))
    assert list(recorded) == ["ttgir", LAUNCH]
    assert LAUNCH not in stages(cache(tmp_path / "none", meta=None))
    assert LAUNCH not in stages(cache(tmp_path / "bad", meta="{not json"))


def test_launch_settings_alone_differ_at_the_launch_stage(tmp_path: Path) -> None:
    """Same code, another amount of shared memory: a TTGIR fingerprint reads no change, the
    stage comparison names the launch stage and the kernel."""
    a = scan_cache(cache(tmp_path / "a"))
    b = scan_cache(cache(tmp_path / "b", {**META, "shared": 65536}))
    diff = compare(a, b)
    assert not diff.changed
    assert diff.stages is not None
    assert (diff.stages.first, diff.stages.kernels) == (LAUNCH, ("k",))
    assert diff.stages.describe() == "IR first differs at launch (k); ttgir identical"
    same = compare(a, scan_cache(cache(tmp_path / "c", {**META, "hash": "1" * 64})))
    assert same.stages is not None
    assert (same.stages.identical, same.stages.complete) == (True, True)


def test_a_side_without_launch_settings_is_not_compared_complete(tmp_path: Path) -> None:
    """A kernel whose metadata is missing on one side: its launch settings were not compared,
    so identical IR does not say that the switch did nothing."""
    a = scan_cache(cache(tmp_path / "a"))
    b = scan_cache(cache(tmp_path / "b", meta=None))
    diff = compare(a, b).stages
    assert diff is not None
    assert (diff.identical, diff.complete, diff.not_compared) == (True, False, (LAUNCH,))
