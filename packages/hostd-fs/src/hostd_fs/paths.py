"""The sandbox: turn a path from a tool argument into a real path inside the effective roots.

A model (or a prompt injection reaching it) chooses these paths, so every spelling that could
leave the roots is refused: `..` with either separator, percent-encoded dots, absolute paths,
symlinks pointing out, sibling folders sharing the root's prefix. Names Windows cannot hold are
refused on every OS so that files written here stay portable, and pipes or devices are never
opened (checked with stat, which does not block).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from hostd_fs.errors import FsError, fs_error_from_os, path_error
from hostd_fs.portable import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    MAX_PATH_DEPTH,
    has_trailing_dot_or_space,
    is_windows_device_name,
    utf8_length,
)

__all__ = ["HOSTILE_PATHS", "Expectation", "resolve_in_roots"]

Expectation = Literal["file", "dir", "any"]

#: Spellings `resolve_in_roots` refuses whatever the roots are (none needs files set up), for
#: plugins to run through their own tools in tests.
HOSTILE_PATHS: tuple[str, ...] = (
    "",
    "../x.md",
    "..\\x.md",
    "a/../../x.md",
    "a\\..\\..\\x.md",
    "%2e%2e/x.md",
    "%2e%2e%2fx.md",
    "..%2fx.md",
    "..%5cx.md",
    "/etc/passwd.md",
    "x\x00.md",
    "a" * 5000 + ".md",
    "é" * 150 + ".md",
    "CON.md",
    "con.md",
    "nul",
    "LPT1.md",
    "a./b.md",
    "b.md ",
    "b.md.",
)

# Where the file system splits names on this platform, and where Windows would.
_NATIVE_SEPARATORS = re.compile("[" + re.escape(os.sep + (os.altsep or "")) + "]")
_ANY_SEPARATOR = re.compile(r"[/\\]")


def _check_length(text: str, shown: str) -> None:
    if utf8_length(text) > MAX_PATH_BYTES:
        raise path_error("TOO_LONG", shown, limit_bytes=MAX_PATH_BYTES, length_bytes=utf8_length(text))
    names = _NATIVE_SEPARATORS.split(text)
    longest = max(names, key=utf8_length)
    if utf8_length(longest) > MAX_NAME_BYTES:
        raise path_error(
            "TOO_LONG", shown, name_limit_bytes=MAX_NAME_BYTES, name_length_bytes=utf8_length(longest)
        )
    # Each folder is one more descriptor step (and one more recursion in naive tree walkers).
    depth = sum(1 for name in names if name)
    if depth > MAX_PATH_DEPTH:
        raise path_error("TOO_LONG", shown, cause="too_deep", depth=depth, depth_limit=MAX_PATH_DEPTH)


def _visible(text: str) -> str:
    """`text` with lone surrogates spelled as escapes, so a message about it can be sent as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_encoding(path: str) -> None:
    # JSON may carry "\ud800"; no portable file name can hold a lone surrogate, and every OS
    # call on it would fail with UnicodeEncodeError. Undecodable bytes of a POSIX name
    # ("\udcff" by surrogateescape) are refused too: macOS and Windows cannot store them.
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise path_error("INVALID_ENCODING", _visible(path)) from None


def _check_portable_names(path: str) -> None:
    for name in _ANY_SEPARATOR.split(path):
        if is_windows_device_name(name) or has_trailing_dot_or_space(name):
            raise path_error("RESERVED_NAME", path, name=name)


def _expand_home(spelling: str) -> str:
    # Only the current user's "~" is expanded: "~other" could name another account's files and
    # a name that merely starts with "~" is an ordinary file name.
    if spelling == "~" or (spelling.startswith("~") and _NATIVE_SEPARATORS.fullmatch(spelling[1:2])):
        try:
            return str(Path(spelling).expanduser())
        except RuntimeError:
            return spelling
    return spelling


_RESOLVE_ATTEMPTS = 3


def _resolve(path: Path, shown: str) -> Path:
    for _attempt in range(_RESOLVE_ATTEMPTS):
        try:
            return path.resolve(strict=False)
        except RuntimeError as exc:
            # Python 3.11 and 3.12 report a symlink loop as RuntimeError.
            raise path_error("SYMLINK_LOOP", shown) from exc
        except UnicodeEncodeError:
            # A root (from the config or the client) the OS cannot name.
            raise path_error("INVALID_ENCODING", _visible(shown)) from None
        except OSError as exc:
            # EINVAL: readlink on a name lstat had just seen as a symlink, swapped meanwhile.
            if exc.errno != errno.EINVAL:
                raise fs_error_from_os(exc, shown, reading=True) from exc
    raise path_error("PATH_CHANGED", shown)


def _resolve_spelling(spelling: str, roots: Sequence[Path], shown: str) -> Path:
    candidate = Path(_expand_home(spelling))
    if not candidate.is_absolute():
        candidate = roots[0] / candidate
    return _resolve(candidate, shown)


def _alternative_spellings(path: str) -> Iterator[str]:
    """Other readings of `path` that a less careful component (or another OS) might act on."""
    decoded = unquote(path)
    if decoded != path:
        yield decoded
    if os.sep == "\\":
        return  # backslashes are already separators
    for reading in dict.fromkeys((path, decoded)):
        if "\\" in reading and ".." in _ANY_SEPARATOR.split(reading):
            yield reading.replace("\\", "/")


def _is_inside(target: Path, roots: Sequence[Path]) -> bool:
    return any(target.is_relative_to(root) for root in roots)


def _outside(path: str, roots: Sequence[Path]) -> FsError:
    return path_error("OUTSIDE_ROOTS", path, roots=[str(root) for root in roots])


def refuse_special_file(mode: int, shown: str) -> None:
    """Refuse pipes, sockets and devices: opening one can block forever or touch hardware."""
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise path_error("FIFO", shown)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise path_error("DEVICE_FILE", shown)


def _check_kind(target: Path, shown: str, *, allow_missing: bool, expect: Expectation) -> None:
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError as exc:
        if allow_missing:
            return
        raise path_error("NOT_FOUND", shown) from exc
    except OSError as exc:
        raise fs_error_from_os(exc, shown, reading=True) from exc
    refuse_special_file(mode, shown)
    if expect == "file" and stat.S_ISDIR(mode):
        raise path_error("IS_DIRECTORY", shown)
    if expect == "dir" and not stat.S_ISDIR(mode):
        raise path_error("NOT_A_DIRECTORY", shown)


def resolve_in_roots(
    path: str,
    roots: Sequence[Path],
    *,
    allow_missing: bool = True,
    expect: Expectation = "file",
) -> Path:
    """The resolved absolute path for `path`, or FsError when it is unsafe or outside `roots`.

    Relative paths resolve against `roots[0]`; symlinks are followed before containment is
    checked, and containment is per path component (`/a/b` does not contain `/a/bc`). With
    `allow_missing=False` a missing target is NOT_FOUND; `expect` says whether the caller needs
    a file, a folder or either. The answer holds at the time of the check only: to open the
    file, use `resolve_beneath` and the functions that take its `RootedPath`.
    """
    return locate_in_roots(path, roots, allow_missing=allow_missing, expect=expect)[0]


def locate_in_roots(
    path: str,
    roots: Sequence[Path],
    *,
    allow_missing: bool = True,
    expect: Expectation = "file",
) -> tuple[Path, list[Path]]:
    """`resolve_in_roots`'s answer, with the resolved roots it was checked against."""
    if not roots:
        raise path_error("NO_ROOT")
    if not path or not path.strip():
        raise path_error("EMPTY_PATH", path)
    if "\x00" in path:
        raise path_error("NUL_BYTE", path.replace("\x00", "\\0"))
    _check_encoding(path)
    _check_length(path, path)
    _check_portable_names(path)

    resolved_roots = [_resolve(Path(root).expanduser(), str(root)) for root in roots]
    target = _resolve_spelling(path, resolved_roots, path)
    _check_length(str(target), path)
    if not _is_inside(target, resolved_roots):
        raise _outside(path, resolved_roots)
    # Defence in depth: a percent-decoded or backslash-separated reading must not escape either.
    for reading in _alternative_spellings(path):
        if "\x00" in reading:
            raise path_error("NUL_BYTE", path)
        if not _is_inside(_resolve_spelling(reading, resolved_roots, path), resolved_roots):
            raise _outside(path, resolved_roots)

    _check_kind(target, path, allow_missing=allow_missing, expect=expect)
    return target, resolved_roots
