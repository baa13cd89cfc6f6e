"""resolve_in_roots: every spelling that leaves the roots is refused, safe paths come back resolved."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hostd_fs import HOSTILE_PATHS, FsError, resolve_in_roots


def refusal(path: str, roots: list[Path], **options: object) -> FsError:
    with pytest.raises(FsError) as caught:
        resolve_in_roots(path, roots, **options)  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    "path",
    [
        "../x.md",
        "..\\x.md",
        "a/../../x.md",
        "a\\..\\..\\x.md",
        "%2e%2e/x.md",
        "%2e%2e%2fx.md",
        "..%2f..%2fx.md",
        "%2e%2e%5cx.md",
        "/etc/passwd.md",
    ],
)
def test_spellings_that_leave_the_root_are_refused(root: Path, path: str) -> None:
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "OUTSIDE_ROOTS")
    assert error.details["roots"] == [str(root)]


@pytest.mark.parametrize("sibling", ["-evil", "x", " copy"])
def test_a_sibling_sharing_the_roots_prefix_is_outside(root: Path, sibling: str) -> None:
    target = f"{root}{sibling}/x.md"
    assert refusal(target, [root]).reason == "OUTSIDE_ROOTS"


def test_a_symlink_inside_pointing_outside_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "escape.md").symlink_to(outside / "x.md")
    assert refusal("escape/x.md", [root]).reason == "OUTSIDE_ROOTS"
    assert refusal("escape.md", [root]).reason == "OUTSIDE_ROOTS"


def test_a_symlink_inside_pointing_inside_is_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    assert resolve_in_roots("alias/x.md", [root]) == root / "real" / "x.md"


@pytest.mark.parametrize("path", ["loop", "loop/x.md", "ping/x.md"])
def test_a_symlink_loop_is_reported_as_such(root: Path, path: str) -> None:
    (root / "loop").symlink_to(root / "loop")
    (root / "ping").symlink_to(root / "pong")
    (root / "pong").symlink_to(root / "ping")
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("INVALID_ARGUMENT", "SYMLINK_LOOP")


def test_a_nul_byte_is_refused_before_anything_else(root: Path) -> None:
    error = refusal("notes/a\x00.md", [root])
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "NUL_BYTE")
    assert "\x00" not in error.message.en


@pytest.mark.parametrize(
    "path",
    [
        "/".join(["abcdefghij"] * 455) + ".md",
        "a" * 300 + ".md",
        "文" * 86 + ".md",
        "ok/" + "é" * 128 + "/x.md",
    ],
    ids=["5000-char-path", "300-byte-name", "258-byte-chinese-name", "256-byte-folder"],
)
def test_overlong_paths_and_names_are_path_too_long(root: Path, path: str) -> None:
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("PATH_TOO_LONG", "TOO_LONG")


def test_a_name_of_exactly_255_bytes_is_accepted(root: Path) -> None:
    name = "文" * 84 + ".md"
    assert len(name.encode()) == 255
    assert resolve_in_roots(name, [root]) == root / name


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes made by mkfifo are POSIX")


@needs_fifo
@pytest.mark.timeout(5)  # opening a FIFO no one writes to would block forever: the timeout fails it
def test_a_fifo_is_refused_without_being_opened(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    error = refusal("pipe.md", [root], expect="any")
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "FIFO")


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")
def test_a_socket_is_refused_like_a_fifo(tmp_path: Path) -> None:
    # AF_UNIX paths are limited to about 100 bytes, so use a short folder.
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.md"))
        assert refusal("s.md", [tmp_path]).reason == "FIFO"


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_device_is_refused(root: Path) -> None:
    error = refusal("/dev/null", [Path("/dev")], expect="any")
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "DEVICE_FILE")
    assert refusal("null", [Path("/dev")]).reason == "DEVICE_FILE"


def test_a_folder_where_a_file_is_needed_is_invalid(root: Path) -> None:
    (root / "x.md").mkdir()
    error = refusal("x.md", [root])
    assert (error.code, error.reason) == ("INVALID_ARGUMENT", "IS_DIRECTORY")
    assert resolve_in_roots("x.md", [root], expect="dir") == root / "x.md"
    assert resolve_in_roots("x.md", [root], expect="any") == root / "x.md"


def test_a_file_where_a_folder_is_needed_is_invalid(root: Path) -> None:
    (root / "f.md").write_text("x")
    assert refusal("f.md", [root], expect="dir").reason == "NOT_A_DIRECTORY"
    assert refusal("f.md/inner.md", [root]).reason == "NOT_A_DIRECTORY"


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("CON.md", "CON.md"),
        ("nul", "nul"),
        ("notes/Aux.tar.gz", "Aux.tar.gz"),
        ("com1", "com1"),
        ("LPT9.txt", "LPT9.txt"),
        ("CON .md", "CON .md"),
        ("a./b.md", "a."),
        ("b.md ", "b.md "),
        ("dir /b.md", "dir "),
        ("x\\con.md", "con.md"),
    ],
)
def test_names_windows_cannot_hold_are_refused_everywhere(root: Path, path: str, name: str) -> None:
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "RESERVED_NAME")
    assert error.details["name"] == name


@pytest.mark.parametrize(
    "path", ["console.md", "nullable.md", "COM10.md", "LPT0", "auxiliary/x.md", ".hidden.md"]
)
def test_names_that_merely_resemble_reserved_ones_are_fine(root: Path, path: str) -> None:
    assert resolve_in_roots(path, [root]) == root / path


@pytest.mark.parametrize("path", ["", "   "])
def test_an_empty_path_is_invalid(root: Path, path: str) -> None:
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("INVALID_ARGUMENT", "EMPTY_PATH")


@pytest.mark.parametrize("path", ["\ud800.md", "notes/a\udfff.md", "x\udcff.md", "%2e%2e/\ud800"])
def test_lone_surrogates_are_invalid_encoding(root: Path, path: str) -> None:
    error = refusal(path, [root])
    assert (error.code, error.reason) == ("INVALID_ARGUMENT", "INVALID_ENCODING")
    assert error.path is not None
    error.path.encode("utf-8")  # shown with escapes, so the envelope can carry it
    assert "\\u" in error.path
    assert error.hint is not None
    assert "Unicode" in error.message.en
    assert "UTF-8" in error.hint.zh


def test_without_roots_nothing_is_allowed() -> None:
    error = refusal("a.md", [])
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "NO_ROOT")
    assert error.hint is not None
    assert "allowed_roots" in error.hint.en


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_the_published_hostile_corpus_is_refused(root: Path, path: str) -> None:
    error = refusal(path, [root])
    assert error.code in {"PATH_NOT_ALLOWED", "PATH_TOO_LONG", "INVALID_ARGUMENT"}


def test_relative_paths_resolve_against_the_first_root(root: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    assert resolve_in_roots("notes/a.md", [root, second]) == root / "notes" / "a.md"
    assert resolve_in_roots(str(second / "b.md"), [root, second]) == second / "b.md"


def test_dots_that_stay_inside_are_normalised(root: Path) -> None:
    assert resolve_in_roots("a/./b/../c.md", [root]) == root / "a" / "c.md"
    assert resolve_in_roots("a/..", [root], expect="dir") == root


def test_a_literal_percent_or_backslash_in_a_name_is_an_ordinary_file(root: Path) -> None:
    assert resolve_in_roots("100%25 done.md", [root]) == root / "100%25 done.md"
    assert resolve_in_roots("a\\b.md", [root]) == root / "a\\b.md"


def test_home_relative_paths_expand_for_the_current_user_only(root: Path) -> None:
    home = Path.home().resolve()
    assert resolve_in_roots("~/x.md", [home]) == home / "x.md"
    assert resolve_in_roots("~other.md", [root]) == root / "~other.md"


def test_missing_files_are_allowed_unless_the_caller_needs_them(root: Path) -> None:
    assert resolve_in_roots("new/deep/file.md", [root]) == root / "new" / "deep" / "file.md"
    error = refusal("new/file.md", [root], allow_missing=False)
    assert (error.code, error.reason) == ("NOT_FOUND", "NOT_FOUND")


def test_roots_given_through_a_symlink_still_contain_their_files(root: Path, tmp_path: Path) -> None:
    (tmp_path / "root-alias").symlink_to(root, target_is_directory=True)
    assert resolve_in_roots("a.md", [tmp_path / "root-alias"]) == root / "a.md"
    assert resolve_in_roots(str(tmp_path / "root-alias" / "a.md"), [root]) == root / "a.md"
