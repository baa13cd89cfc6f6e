"""FsError: codes and reasons from OS errors, bilingual messages and hints, safe to pickle."""

from __future__ import annotations

import errno
import pickle
import re
from pathlib import Path

import pytest
from hostd_fs import REASONS, FsError, fs_error_from_os
from hostd_fs.errors import path_error

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize(
    ("error_number", "code", "reason"),
    [
        (errno.EACCES, "PERMISSION_DENIED", "PERMISSION"),
        (errno.EPERM, "PERMISSION_DENIED", "PERMISSION"),
        (errno.EROFS, "PERMISSION_DENIED", "READ_ONLY_FS"),
        (errno.ENOSPC, "DISK_FULL", "NO_SPACE"),
        (errno.EDQUOT, "DISK_FULL", "NO_SPACE"),
        (errno.ENAMETOOLONG, "PATH_TOO_LONG", "TOO_LONG"),
        (errno.EISDIR, "INVALID_ARGUMENT", "IS_DIRECTORY"),
        (errno.ENOTDIR, "INVALID_ARGUMENT", "NOT_A_DIRECTORY"),
        (errno.ELOOP, "INVALID_ARGUMENT", "SYMLINK_LOOP"),
        (errno.ENOENT, "NOT_FOUND", "NOT_FOUND"),
        (errno.EBUSY, "FILE_LOCKED", "IN_USE"),
        (errno.EIO, "WRITE_ERROR", "OS_ERROR"),
    ],
)
def test_os_errors_map_to_stable_codes(error_number: int, code: str, reason: str) -> None:
    error = fs_error_from_os(OSError(error_number, "strerror text"), "/x/y.md")
    assert (error.code, error.reason, error.path) == (code, reason, "/x/y.md")
    assert error.details["errno"] == error_number


def test_an_unknown_error_keeps_its_errno_and_reports_reads_as_read_errors() -> None:
    exc = OSError(errno.EIO, "Input/output error")
    error = fs_error_from_os(exc, "f")
    assert error.facts == {"errno": errno.EIO, "strerror": "Input/output error"}
    assert error.details == {**error.facts, "reason": "OS_ERROR", "path": "f"}
    read_error = fs_error_from_os(exc, "f", reading=True)
    assert (read_error.code, read_error.reason) == ("READ_ERROR", "OS_ERROR")
    assert "Reading" in read_error.message.en


# The details each raiser provides for its reason.
SAMPLE_DETAILS: dict[str, dict[str, object]] = {
    "OUTSIDE_ROOTS": {"roots": ["/notes"]},
    "RESERVED_NAME": {"name": "CON.md"},
    "LOCK_TIMEOUT": {"timeout": 10.0},
    "TOO_LONG": {"limit_bytes": 4096, "depth": 1501, "depth_limit": 128},
    "OS_ERROR": {"errno": 1234, "strerror": "odd"},
    "HARD_LINK": {"links": 2},
    "FILE_TOO_LARGE": {"limit_bytes": 1024},
    "NO_ROOT": {"ignored": ["'file:///a%00b'"]},
}


@pytest.mark.parametrize(
    ("reason", "cause"),
    [(reason, None) for reason in sorted(REASONS)]
    + [("NO_ROOT", "implicit_root"), ("NO_ROOT", "no_overlap"), ("NO_ROOT", "invalid_client_roots")]
    + [("TOO_LONG", "too_deep")],
)
def test_every_reason_speaks_english_and_chinese(reason: str, cause: str | None) -> None:
    details = {**SAMPLE_DETAILS.get(reason, {}), "cwd": "/", "configured": ["/a"]}
    if cause:
        details["cause"] = cause
    error = path_error(reason, "/notes/a.md", **details)
    for language in ("en", "zh", "zh-CN", "fr"):
        assert error.message.render(language).strip()
        assert error.hint is not None
        assert error.hint.render(language).strip()
    assert error.hint is not None
    assert CJK.search(error.message.zh)
    assert CJK.search(error.hint.zh)
    assert not CJK.search(error.message.en)
    assert not CJK.search(error.hint.en)
    assert "?" not in error.message.en + error.hint.en, "a placeholder was left unfilled"
    assert str(error) == error.message.en


def test_the_english_message_is_the_exception_text() -> None:
    error = fs_error_from_os(OSError(errno.ENOSPC, "No space left on device"), "/d/a.md")
    assert str(error) == "The disk holding '/d/a.md' is full (or your quota is used up)."
    assert "磁盘已满" in error.message.zh


def test_errors_survive_pickling_across_processes() -> None:
    error = FsError("PATH_NOT_ALLOWED", "OUTSIDE_ROOTS", "/etc/x.md", {"roots": ["/r"]})
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.reason, copy.path, copy.details) == (
        error.code,
        error.reason,
        error.path,
        error.details,
    )
    assert str(copy) == str(error)


def test_a_huge_path_is_abbreviated_in_messages_but_kept_whole() -> None:
    path = "a" * 5000 + ".md"
    error = path_error("TOO_LONG", path)
    assert error.path == path
    assert len(error.message.en) < 400
    assert len(error.message.zh) < 400


def test_the_readme_documents_every_reason_with_its_code() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)`", readme, flags=re.MULTILINE))
    assert set(documented) == REASONS
    for reason, code in documented.items():
        if reason != "OS_ERROR":
            assert path_error(reason).code == code, reason
