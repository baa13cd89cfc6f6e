"""Files reached beneath a root's descriptor: a folder or file swapped for a symlink after the
check is refused, never followed; hard links are not written; missing folders are made
beneath the root; deep paths and broken client roots are clear errors (issue 17, 14).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hostd_fs import (
    FsError,
    RootedPath,
    atomic_write,
    effective_roots,
    locked_append,
    locked_overwrite,
    read_beneath,
    resolve_beneath,
)
from hostd_fs import beneath as beneath_module


@pytest.fixture(params=["dir_fd", "path_fallback"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each test with descriptors and with the portable path-based fallback (Windows)."""
    if request.param == "path_fallback":
        monkeypatch.setattr(beneath_module, "HAS_DIR_FD", False)
    elif not beneath_module.HAS_DIR_FD:
        pytest.skip("this platform has no dir_fd support")
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def swap_for_symlink(folder: Path, target: Path) -> None:
    """What the attacker does between the check and the write: the folder becomes a symlink."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)


Write = Callable[[RootedPath, Path], object]
WRITES: dict[str, Write] = {
    "append": lambda target, locks: locked_append(target, lambda size: b"x", lock_dir=locks),
    "overwrite": lambda target, locks: locked_overwrite(target, b"x", lock_dir=locks),
    "atomic_write": lambda target, locks: atomic_write(target, b"x"),
    "read": lambda target, locks: read_beneath(target),
}


@pytest.mark.parametrize("operation", sorted(WRITES))
def test_a_folder_swapped_for_a_symlink_after_resolving_is_refused(
    root: Path, outside: Path, lock_dir: Path, walk: str, operation: str
) -> None:
    (root / "box" / "deeper").mkdir(parents=True)
    (root / "box" / "deeper" / "a.md").write_text("inside")
    (outside / "deeper").mkdir()
    (outside / "deeper" / "a.md").write_text("outside, untouched")
    target = resolve_beneath("box/deeper/a.md", [root])
    assert target.path == root / "box" / "deeper" / "a.md"
    swap_for_symlink(root / "box", outside)
    with pytest.raises(FsError) as caught:
        WRITES[operation](target, lock_dir)
    assert (caught.value.code, caught.value.reason) == ("PATH_NOT_ALLOWED", "PATH_CHANGED")
    assert caught.value.message.zh
    assert "符号链接" in caught.value.message.zh
    assert sorted(os.listdir(outside / "deeper")) == ["a.md"]
    assert (outside / "deeper" / "a.md").read_text() == "outside, untouched"


@pytest.mark.parametrize("operation", sorted(WRITES))
def test_a_file_swapped_for_a_symlink_after_resolving_is_refused(
    root: Path, outside: Path, lock_dir: Path, walk: str, operation: str
) -> None:
    (root / "a.md").write_text("inside")
    (outside / "secret.md").write_text("outside, untouched")
    target = resolve_beneath("a.md", [root])
    (root / "a.md").unlink()
    (root / "a.md").symlink_to(outside / "secret.md")
    with pytest.raises(FsError) as caught:
        WRITES[operation](target, lock_dir)
    assert caught.value.reason == "PATH_CHANGED"
    assert (outside / "secret.md").read_text() == "outside, untouched"
    assert os.listdir(outside) == ["secret.md"]


@pytest.mark.parametrize("operation", ["append", "overwrite", "atomic_write"])
def test_a_hard_link_is_never_written(
    root: Path, outside: Path, lock_dir: Path, walk: str, operation: str
) -> None:
    (outside / "secret.md").write_text("outside, untouched")
    os.link(outside / "secret.md", root / "x.md")
    target = resolve_beneath("x.md", [root])
    with pytest.raises(FsError) as caught:
        WRITES[operation](target, lock_dir)
    error = caught.value
    assert (error.code, error.reason, error.details["links"]) == ("PATH_NOT_ALLOWED", "HARD_LINK", 2)
    assert error.hint is not None
    assert "硬链接" in error.message.zh
    assert "hard link" in error.message.en
    assert error.hint.en
    assert (outside / "secret.md").read_text() == "outside, untouched"
    assert sorted(os.listdir(root)) == ["x.md"]


def test_a_hard_link_may_still_be_read(root: Path, outside: Path, walk: str) -> None:
    (outside / "shared.md").write_text("shared")
    os.link(outside / "shared.md", root / "x.md")
    assert read_beneath(resolve_beneath("x.md", [root], allow_missing=False)) == b"shared"


@pytest.mark.parametrize("operation", ["append", "overwrite", "atomic_write"])
def test_writers_make_missing_parent_folders_beneath_the_root(
    root: Path, lock_dir: Path, walk: str, operation: str
) -> None:
    target = resolve_beneath("new/deeper/a.md", [root])
    assert not (root / "new").exists()
    WRITES[operation](target, lock_dir)
    assert (root / "new" / "deeper" / "a.md").read_bytes() == b"x"


def test_create_folders_makes_a_folder_or_a_files_parents_now(root: Path, walk: str) -> None:
    folder = resolve_beneath("out/articles", [root], expect="dir", create_folders=True)
    assert (root / "out" / "articles").is_dir()
    assert folder.exists()
    resolve_beneath("notes/2024/a.md", [root], create_folders=True)
    assert (root / "notes" / "2024").is_dir()
    assert not (root / "notes" / "2024" / "a.md").exists()


def test_the_outermost_root_is_walked_so_a_nested_root_cannot_be_swapped(root: Path) -> None:
    (root / "inner").mkdir()
    rooted = resolve_beneath(str(root / "inner" / "a.md"), [root / "inner", root])
    assert (rooted.root, rooted.names) == (root, ("inner", "a.md"))
    assert str(rooted) == str(root / "inner" / "a.md")


def test_append_reports_created_and_previous_size(root: Path, lock_dir: Path, walk: str) -> None:
    target = resolve_beneath("a.md", [root])
    first = locked_append(target, lambda size: b"one" if size == 0 else b"!", lock_dir=lock_dir)
    second = locked_append(target, lambda size: b"+two" if size else b"?", lock_dir=lock_dir)
    assert (first.created, first.previous_size, second.created, second.previous_size) == (True, 0, False, 3)
    assert read_beneath(target) == b"one+two"


def test_read_beneath_refuses_more_than_max_bytes_and_pipes(root: Path, walk: str) -> None:
    (root / "big.md").write_bytes(b"x" * 100)
    with pytest.raises(FsError) as caught:
        read_beneath(resolve_beneath("big.md", [root]), max_bytes=99)
    assert (caught.value.code, caught.value.reason) == ("TOO_LONG", "FILE_TOO_LARGE")
    assert read_beneath(resolve_beneath("big.md", [root]), max_bytes=100) == b"x" * 100
    if hasattr(os, "mkfifo"):
        rooted = resolve_beneath("pipe.md", [root])
        os.mkfifo(root / "pipe.md")
        with pytest.raises(FsError) as caught:
            read_beneath(rooted)
        assert caught.value.reason == "FIFO"


def test_a_path_1500_folders_deep_is_path_too_long_with_a_hint(root: Path) -> None:
    with pytest.raises(FsError) as caught:
        resolve_beneath("a/" * 1500 + "x.md", [root])
    error = caught.value
    assert (error.code, error.reason, error.details["depth_limit"]) == ("PATH_TOO_LONG", "TOO_LONG", 128)
    assert error.hint is not None
    assert "128" in error.hint.en
    assert "128" in error.hint.zh
    assert list(root.iterdir()) == []
    assert resolve_beneath("a/" * 100 + "x.md", [root]).names[-1] == "x.md"


@pytest.mark.parametrize("spelling", ["%00", "\x00", "\ud800"])
def test_a_client_root_holding_nul_or_bad_text_is_ignored_with_a_warning(
    tmp_path: Path, root: Path, spelling: str, caplog: pytest.LogCaptureFixture
) -> None:
    broken = f"file://{tmp_path}/bad{spelling}root"
    with caplog.at_level(logging.WARNING, logger="hostd_fs.roots"):
        assert effective_roots(None, [broken, root.as_uri()]) == [root]
    assert any("ignoring the client root" in record.getMessage() for record in caplog.records)


def test_only_broken_client_roots_refuse_instead_of_falling_back_to_the_cwd(tmp_path: Path) -> None:
    with pytest.raises(FsError) as caught:
        effective_roots(None, [f"file://{tmp_path}/bad%00root"], cwd=tmp_path)
    error = caught.value
    assert (error.code, error.reason, error.details["cause"]) == (
        "PATH_NOT_ALLOWED",
        "NO_ROOT",
        "invalid_client_roots",
    )
    assert error.hint is not None
    assert "NUL" in error.hint.en
    assert "NUL" in error.hint.zh


def test_a_broken_configured_root_alone_is_refused_not_widened(tmp_path: Path) -> None:
    with pytest.raises(FsError) as caught:
        effective_roots([f"{tmp_path}/bad\x00root"], [tmp_path.as_uri()])
    assert caught.value.reason == "NO_ROOT"


def test_a_hard_link_planted_after_the_lookup_is_not_appended_to_as_new(
    root: Path, outside: Path, lock_dir: Path, walk: str
) -> None:
    (outside / "secret.md").write_text("outside, untouched")
    target = resolve_beneath("x.md", [root])

    def plant_then_chunk(size: int) -> bytes:
        raise AssertionError("the chunk must not be built for a planted file")

    real_lstat = beneath_module._Folder.lstat

    def lstat_then_plant(self: beneath_module._Folder, name: str) -> os.stat_result | None:
        found = real_lstat(self, name)
        if name == "x.md" and found is None:
            os.link(outside / "secret.md", root / "x.md")  # the attacker wins the gap
        return found

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(beneath_module._Folder, "lstat", lstat_then_plant)
        with pytest.raises(FsError) as caught:
            locked_append(target, plant_then_chunk, lock_dir=lock_dir)
    assert caught.value.reason == "PATH_CHANGED"
    assert (outside / "secret.md").read_text() == "outside, untouched"
