"""atomic_write: the whole new version or the old one, permissions kept, no temp files left."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostd_fs import FsError, atomic_write, locked_append

RUNNING_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def temp_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith(".") and name.endswith(".tmp"))


def test_writes_bytes_and_text_and_returns_the_byte_count(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    assert atomic_write(target, b"\x00\xffbytes") == 7
    assert target.read_bytes() == b"\x00\xffbytes"
    assert atomic_write(str(target), "总结") == 6
    assert target.read_text(encoding="utf-8") == "总结"
    assert atomic_write(target, "総", encoding="utf-16-le") == 2


def test_pieces_are_written_as_they_come(tmp_path: Path) -> None:
    """A large file need never be whole in memory: its bytes may come as an iterable of pieces."""
    target = tmp_path / "a.json"
    assert atomic_write(target, iter([b'{"a": ', "总结".encode(), b"}"])) == 13
    assert target.read_bytes() == '{"a": 总结}'.encode()
    assert temp_files(tmp_path) == []


def test_pieces_that_fail_midway_leave_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("old", encoding="utf-8")

    def pieces() -> Iterator[bytes]:
        yield b"half of the new "
        raise ValueError("the encoder failed")

    with pytest.raises(ValueError, match="the encoder failed"):
        atomic_write(target, pieces())
    assert target.read_text(encoding="utf-8") == "old"
    assert temp_files(tmp_path) == []


def test_no_temp_file_is_left_after_success(tmp_path: Path) -> None:
    for version in range(5):
        atomic_write(tmp_path / "a.md", f"version {version}")
    assert os.listdir(tmp_path) == ["a.md"]


def test_permissions_of_the_replaced_file_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "secret.md"
    target.write_text("old")
    target.chmod(0o600)
    atomic_write(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    target.chmod(0o640)
    atomic_write(target, "newer")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_new_files_get_0644_minus_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.md", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == 0o640
    atomic_write(tmp_path / "b.md", "x")
    assert stat.S_IMODE((tmp_path / "b.md").stat().st_mode) == 0o644 & ~previous


def test_a_symlink_is_written_through_and_kept(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("old")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    atomic_write(tmp_path / "link.md", "new")
    assert (tmp_path / "link.md").is_symlink()
    assert (tmp_path / "real.md").read_text() == "new"


def test_a_folder_cannot_be_overwritten(tmp_path: Path) -> None:
    (tmp_path / "x.md").mkdir()
    with pytest.raises(FsError) as caught:
        atomic_write(tmp_path / "x.md", "data")
    assert (caught.value.code, caught.value.reason) == ("INVALID_ARGUMENT", "IS_DIRECTORY")
    assert temp_files(tmp_path) == []


def test_a_missing_folder_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(FsError) as caught:
        atomic_write(tmp_path / "missing" / "a.md", "data")
    assert (caught.value.code, caught.value.reason) == ("NOT_FOUND", "NOT_FOUND")


@pytest.fixture
def unwritable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder no file can be created in: read-only for a normal user, immutable for root."""
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "a.md").write_text("old")
    if not RUNNING_AS_ROOT:
        folder.chmod(0o500)
        try:
            yield folder
        finally:
            folder.chmod(0o700)
        return
    # Root ignores permission bits; the immutable attribute (ext4, xfs, btrfs) stops root too.
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root on a file system without chattr +i: cannot make a folder unwritable")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_unwritable_folder_is_permission_denied_and_the_old_file_stays(unwritable_folder: Path) -> None:
    target = unwritable_folder / "a.md"
    with pytest.raises(FsError) as caught:
        atomic_write(target, "new")
    assert (caught.value.code, caught.value.reason) == ("PERMISSION_DENIED", "PERMISSION")
    assert target.read_text() == "old"
    assert temp_files(unwritable_folder) == []


def mounted_tmpfs(mount_point: Path, options: str) -> Iterator[Path]:
    """A real tmpfs at `mount_point` for the test's duration (needs root and a kernel allowing it)."""
    if not RUNNING_AS_ROOT or not sys.platform.startswith("linux"):
        pytest.skip("mounting a small tmpfs needs root on Linux")
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB disk, easy to fill."""
    yield from mounted_tmpfs(tmp_path / "tiny", "size=1m")


@pytest.fixture
def read_only_disk(tmp_path: Path) -> Iterator[Path]:
    yield from mounted_tmpfs(tmp_path / "read-only", "size=1m,ro")


def test_a_read_only_disk_is_permission_denied_with_its_own_reason(read_only_disk: Path) -> None:
    with pytest.raises(FsError) as caught:
        atomic_write(read_only_disk / "a.md", "data")
    assert (caught.value.code, caught.value.reason) == ("PERMISSION_DENIED", "READ_ONLY_FS")


def test_a_full_disk_is_disk_full_and_the_old_file_stays(tiny_disk: Path) -> None:
    target = tiny_disk / "a.md"
    atomic_write(target, "old version")
    with pytest.raises(FsError) as caught:
        atomic_write(target, b"x" * 2_000_000)
    error = caught.value
    assert (error.code, error.reason) == ("DISK_FULL", "NO_SPACE")
    assert "full" in error.message.en
    assert "磁盘已满" in error.message.zh
    assert target.read_text() == "old version"
    assert temp_files(tiny_disk) == []


def test_a_full_disk_during_an_append_rolls_the_file_back(tiny_disk: Path, lock_dir: Path) -> None:
    target = tiny_disk / "log.md"
    target.write_bytes(b"kept\n")
    with pytest.raises(FsError) as caught:
        locked_append(target, lambda size: b"y" * 2_000_000, lock_dir=lock_dir)
    assert caught.value.code == "DISK_FULL"
    assert target.read_bytes() == b"kept\n"
    with pytest.raises(FsError):
        locked_append(tiny_disk / "new.md", lambda size: b"z" * 2_000_000, lock_dir=lock_dir)
    assert not (tiny_disk / "new.md").exists(), "a file the failed append created is removed"
