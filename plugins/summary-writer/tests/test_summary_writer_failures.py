"""update_summary when the file system says no: each failure has its code and a hint, and
the old file is intact afterwards.

DISK_FULL and the read-only case use real small file systems (a 1 MB tmpfs, remounted
read-only), which needs root: CI runs as root; elsewhere those tests skip and say why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import Connect
from summary_writer_support import host_config, mount_problem, mounted_tmpfs, remount_read_only, update

pytestmark = pytest.mark.anyio

OLD_TEXT = "# 旧的总结\n\nold summary that must survive\n"


def assert_error(envelope: dict[str, Any], code: str) -> None:
    assert envelope["status"] == "error", envelope
    assert envelope["error"]["code"] == code, envelope["error"]
    assert envelope["message"], envelope["error"]
    assert envelope["error"]["hint"], envelope["error"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MB tmpfs holding one small file."""
    problem = mount_problem()
    if problem:
        pytest.skip(f"DISK_FULL test skipped: {problem}")
    mount_point = tmp_path / "small-disk"
    try:
        context = mounted_tmpfs(mount_point, "1m")
        context.__enter__()
    except OSError as exc:
        pytest.skip(f"DISK_FULL test skipped: {exc}")
    try:
        (mount_point / "notes.md").write_text(OLD_TEXT, encoding="utf-8")
        yield mount_point
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding one file that cannot be written: a read-only tmpfs (root) or chmod."""
    folder = tmp_path / "read-only"
    if mount_problem() is None:
        try:
            context = mounted_tmpfs(folder, "1m")
            context.__enter__()
        except OSError as exc:
            pytest.skip(f"read-only test skipped: {exc}")
        try:
            (folder / "notes.md").write_text(OLD_TEXT, encoding="utf-8")
            remount_read_only(folder)
            yield folder
        except OSError as exc:
            pytest.skip(f"read-only test skipped: {exc}")
        finally:
            context.__exit__(None, None, None)
        return
    # Not root: permissions stop writes, so chmod is enough.
    folder.mkdir()
    (folder / "notes.md").write_text(OLD_TEXT, encoding="utf-8")
    (folder / "notes.md").chmod(0o444)
    folder.chmod(0o555)
    try:
        yield folder
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_disk_full_is_reported_and_the_old_file_survives(
    connect: Connect, small_disk: Path, language: str
) -> None:
    big = "满" * 500_000  # 1.5 MB of UTF-8, more than the whole file system
    config = host_config([small_disk], language, max_content_bytes=4 << 20)
    async with connect(config=config) as client:
        overwrite = await update(client, content=big, file_path="notes.md", mode="overwrite")
        append = await update(client, content=big, file_path="notes.md")
        new_file = await update(client, content=big, file_path="fresh/new.md")
        after = await update(client, content="still works", file_path="notes.md")
    for envelope in (overwrite, append, new_file):
        assert_error(envelope, "DISK_FULL")
    if language == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in overwrite["message"] + overwrite["error"]["hint"])
    text = (small_disk / "notes.md").read_text(encoding="utf-8")
    assert text.startswith(OLD_TEXT)
    assert text.endswith("still works")
    assert after["status"] == "success"
    assert after["separator_added"] is True
    leftovers = [p.name for p in small_disk.iterdir() if p.name not in {"notes.md", "fresh"}]
    assert leftovers == [], "temporary files left behind"


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_read_only_folder_is_permission_denied_and_the_old_file_survives(
    connect: Connect, read_only_folder: Path, language: str
) -> None:
    async with connect(config=host_config([read_only_folder], language)) as client:
        append = await update(client, content="new", file_path="notes.md")
        overwrite = await update(client, content="new", file_path="notes.md", mode="overwrite")
        new_file = await update(client, content="new", file_path="sub/new.md")
    for envelope in (append, overwrite, new_file):
        assert_error(envelope, "PERMISSION_DENIED")
    if language == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in append["message"] + append["error"]["hint"])
    assert (read_only_folder / "notes.md").read_text(encoding="utf-8") == OLD_TEXT
    assert sorted(os.listdir(read_only_folder)) == ["notes.md"]


async def test_file_locked_when_another_writer_holds_the_file(connect: Connect, hostd_roots: Path) -> None:
    from hostd_fs import path_lock
    from hostd_testing import shared_lock_dir

    target = hostd_roots / "shared.md"
    target.write_text(OLD_TEXT, encoding="utf-8")
    async with connect(config=host_config([hostd_roots], lock_timeout_seconds=0.3)) as client:
        with path_lock(target.resolve(), lock_dir=shared_lock_dir(), timeout=5):
            append = await update(client, content="blocked", file_path="shared.md")
            overwrite = await update(client, content="blocked", file_path="shared.md", mode="overwrite")
            assert target.read_text(encoding="utf-8") == OLD_TEXT
        released = await update(client, content="after release", file_path="shared.md")
    assert_error(append, "FILE_LOCKED")
    assert_error(overwrite, "FILE_LOCKED")
    assert released["status"] == "success"
    assert target.read_text(encoding="utf-8").endswith("after release")


async def test_over_long_paths_are_path_too_long(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots])) as client:
        long_name = await update(client, content="x", file_path="n" * 300 + ".md")
        long_path = await update(client, content="x", file_path="d/" * 2100 + "x.md")
    assert_error(long_name, "PATH_TOO_LONG")
    assert_error(long_path, "PATH_TOO_LONG")
    assert os.listdir(hostd_roots) == []


async def test_parent_that_is_a_file_is_refused_cleanly(connect: Connect, hostd_roots: Path) -> None:
    (hostd_roots / "plain").write_text("a file, not a folder")
    async with connect(config=host_config([hostd_roots])) as client:
        envelope = await update(client, content="x", file_path="plain/a.md")
    assert envelope["status"] == "error"
    assert envelope["error"]["code"] != "INTERNAL"
    assert envelope["error"]["hint"]
    assert (hostd_roots / "plain").read_text() == "a file, not a folder"


async def test_overwrite_keeps_the_file_permissions(connect: Connect, hostd_roots: Path) -> None:
    target = hostd_roots / "private.md"
    target.write_text(OLD_TEXT)
    target.chmod(0o640)
    async with connect(config=host_config([hostd_roots])) as client:
        await update(client, content="replaced", file_path="private.md", mode="overwrite")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_text() == "replaced"


async def test_lock_files_never_appear_in_the_users_folders(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots])) as client:
        await update(client, content="one", file_path="notes/a.md")
        await update(client, content="two", file_path="notes/a.md")
        await update(client, content="three", file_path="notes/a.md", mode="overwrite")
    assert sorted(str(p.relative_to(hostd_roots)) for p in hostd_roots.rglob("*")) == ["notes", "notes/a.md"]
