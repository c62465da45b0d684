"""core.store: the baseline store's layout, index and refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_zlbench.core.records import CALIBER_FIELDS
from pytest_zlbench.core.store import (
    GITIGNORE_FILE,
    INDEX_FILE,
    Entry,
    Store,
    StoreError,
    caliber_key,
    check_name,
    list_lines,
)

CALIBER = dict.fromkeys(CALIBER_FIELDS, "x") | {
    "backend": "cuda",
    "device": "NVIDIA H200",
    "timer": "graph",
}


def entry(name: str, caliber: dict[str, str] = CALIBER) -> Entry:
    return Entry(
        name=name,
        kind="run",
        saved_at="2025-01-01T00:00:00+00:00",
        key=caliber_key(caliber),
        caliber=caliber,
        commit="0123456789abcdef",
        dirty=True,
    )


def source(tmp_path: Path) -> Path:
    src = tmp_path / "run"
    (src / "triton_cache").mkdir(parents=True)
    (src / "triton_cache" / "big.ttgir").write_text("cache")
    (src / "rows.jsonl").write_text("{}\n")
    (src / "run_identity.json").write_text("{}\n")
    (src / "op").mkdir()
    (src / "op" / "ab.json").write_text("{}\n")
    (src / "op" / "rows.jsonl").write_text("not copied\n")
    return src


def test_caliber_key_is_readable_and_exact() -> None:
    key = caliber_key(CALIBER)
    assert key.startswith("cuda-nvidia_h200-graph-")
    assert caliber_key(dict(reversed(list(CALIBER.items())))) == key
    assert caliber_key(CALIBER | {"bench_level": "core"}) != key


def test_save_copies_only_the_named_files_into_the_caliber_folder(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    assert store.entries() == []
    path = store.save(source(tmp_path), entry("base"), ["rows.jsonl", "ir.json"], ["ab.json"])
    assert path == tmp_path / "store" / caliber_key(CALIBER) / "base"
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == [
        "op",
        "op/ab.json",
        "rows.jsonl",
    ]
    (found,) = store.entries()
    assert found == entry("base")
    assert store.find("base") == found
    assert store.path_of(found) == path
    index = json.loads((tmp_path / "store" / INDEX_FILE).read_text())
    assert index["entries"][0]["path"] == f"{caliber_key(CALIBER)}/base"
    assert list_lines([found]) == [["base", "run", found.saved_at, "0123456789ab+dirty", found.key]]
    # no temporary folder is left beside the entry
    assert [p.name for p in path.parent.iterdir()] == ["base"]


def test_a_name_is_never_overwritten(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.save(source(tmp_path), entry("base"), ["rows.jsonl"])
    other = CALIBER | {"device": "NVIDIA H100"}
    with pytest.raises(StoreError, match="already stored"):
        store.save(source(tmp_path / "2"), entry("base", other), ["rows.jsonl"])
    assert [e.name for e in store.entries()] == ["base"]


@pytest.mark.parametrize("name", ["", ".hidden", "-x", "a/b", "a b", "..", "ü"])
def test_a_name_that_cannot_name_a_folder_is_refused(name: str) -> None:
    with pytest.raises(StoreError):
        check_name(name)


def test_an_unknown_name_says_what_is_stored(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.save(source(tmp_path), entry("base"), ["rows.jsonl"])
    with pytest.raises(StoreError, match=r"no stored run or screen named 'nope' .*latest: base"):
        store.find("nope")


@pytest.mark.parametrize("text", ["not json", "[]", '{"entries": 3}', '{"entries": [1]}'])
def test_a_malformed_index_is_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / INDEX_FILE).write_text(text)
    with pytest.raises(StoreError) as info:
        Store(tmp_path / "store").entries()
    assert "\n" not in str(info.value)


def test_a_store_that_cannot_be_created_is_named_before_anything_is_saved(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("")
    Store(tmp_path / "new" / "store").check_writable()  # absent folders are created on save
    below = tmp_path / "a_file" / "deeper" / "store"
    with pytest.raises(StoreError) as info:
        Store(below).check_writable()
    assert str(info.value) == (
        f"{below}: cannot be created or written ({tmp_path / 'a_file'}: not a directory)"
    )
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(StoreError, match=r"gone: a link to nothing\)$"):
        Store(tmp_path / "gone" / "store").check_writable()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_store_in_a_read_only_folder_is_named_before_anything_is_saved(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o555)
    with pytest.raises(StoreError, match=r"ro: not writable\)$"):
        Store(tmp_path / "ro" / "store").check_writable()


def test_a_folder_that_is_neither_empty_nor_a_store_is_refused(tmp_path: Path) -> None:
    """``zl_store = /etc`` wrote ``/etc/index.json``, ``/etc/.lock`` and ``/etc/<key>/``."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0\n")
    store = Store(etc)
    with pytest.raises(StoreError) as info:
        store.check_writable()
    assert str(info.value) == (
        f"{etc}: not empty and not a zlbench store (1 entries: passwd); give a new or empty folder"
    )
    with pytest.raises(StoreError):
        store.save(tmp_path, entry("base"), ["rows.jsonl"])
    assert sorted(p.name for p in etc.iterdir()) == ["passwd"]  # nothing written
    run = tmp_path / "run"
    run.mkdir()
    (run / "run_identity.json").write_text("{}")
    with pytest.raises(StoreError, match=r"holds a recorded run, not a zlbench store"):
        Store(run).check_writable()


def test_an_empty_folder_becomes_a_store_and_a_store_stays_one(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    store = Store(empty)
    store.check_writable()
    src = source(tmp_path)
    store.save(src, entry("base"), ["rows.jsonl"])
    assert json.loads((empty / ".zl_kind").read_text())["kind"] == "store"
    store.check_writable()
    store.save(src, entry("next"), ["rows.jsonl"])
    # a store written before the marker existed is known by its index
    (empty / ".zl_kind").unlink()
    Store(empty).check_writable()


def test_a_store_the_first_save_creates_keeps_itself_out_of_git(tmp_path: Path) -> None:
    """Inside a checkout the store is not left untracked: it ignores every file it holds."""
    store = Store(tmp_path / "checkout" / ".zlbench")
    store.save(source(tmp_path), entry("base"), ["rows.jsonl"])
    assert (store.root / GITIGNORE_FILE).read_text().splitlines()[-1] == "*"
    assert [e.name for e in store.entries()] == ["base"]


def test_a_store_folder_the_user_made_gets_no_gitignore(tmp_path: Path) -> None:
    """A folder the user made (a store kept in version control on purpose) is left as made."""
    (tmp_path / "kept").mkdir()
    Store(tmp_path / "kept").save(source(tmp_path), entry("base"), ["rows.jsonl"])
    assert not (tmp_path / "kept" / GITIGNORE_FILE).exists()
