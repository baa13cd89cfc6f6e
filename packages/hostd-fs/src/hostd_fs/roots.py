"""Which folders a file-writing tool may touch: the configured roots, the client's, or the cwd.

The rule is DESIGN.md's: configured `allowed_roots` intersected with the roots the MCP client
shares when both exist, else whichever exists, else the working directory. IDEs often start
stdio servers in `/` or the home folder, so those are never taken implicitly: the user is told
to configure `allowed_roots` instead.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from hostd_fs.errors import path_error

__all__ = ["effective_roots"]

_log = logging.getLogger(__name__)

# A URI has a scheme of two or more letters; one letter followed by ":" is a Windows drive.
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
_LOCAL_HOSTS = ("", "localhost")


def _path_from_file_uri(uri: str) -> Path | None:
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        return None
    if parts.netloc.lower() not in _LOCAL_HOSTS:
        if os.name != "nt":
            return None
        # On Windows file://server/share/dir names a UNC path.
        return Path(f"\\\\{parts.netloc}{url2pathname(parts.path)}")
    # url2pathname percent-decodes, and on Windows also turns "/C:/dir" into "C:\\dir".
    return Path(url2pathname(parts.path))


def _as_path(entry: str | Path) -> Path | None:
    """A root given as a path or a `file://` URI; None for other URIs (vscode-remote:, https:)."""
    if isinstance(entry, Path):
        return entry
    if _URI_SCHEME.match(entry):
        return _path_from_file_uri(entry)
    return Path(entry) if entry else None


def _canonical(path: Path) -> Path:
    try:
        return path.expanduser().resolve(strict=False)
    except RuntimeError as exc:
        # Python 3.11 and 3.12 report a symlink loop as RuntimeError: a root like that is unusable.
        raise path_error("SYMLINK_LOOP", str(path)) from exc


def _unusable(root: Path) -> str | None:
    """Why no OS call can name `root` (a NUL, or a lone surrogate from "%ED%A0%80"), or None."""
    text = str(root)
    if "\x00" in text:
        return "it holds a NUL character"
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return "it holds text that is not valid Unicode"
    return None


def _canonical_roots(entries: Sequence[str | Path] | None, *, source: str) -> tuple[list[Path], list[str]]:
    """The usable roots among `entries`, and the spellings of those no OS call could name."""
    roots: list[Path] = []
    ignored: list[str] = []
    for entry in entries or ():
        root = _as_path(entry)
        if root is None:
            continue
        problem = _unusable(root)
        if problem is not None:
            shown = repr(str(entry))
            _log.warning("ignoring the %s root %s: %s (NUL or invalid text)", source, shown, problem)
            ignored.append(shown)
            continue
        roots.append(_canonical(root))
    return _unique(roots), ignored


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def _intersect(configured: list[Path], client: list[Path]) -> list[Path]:
    overlap: list[Path] = []
    for allowed in configured:
        for offered in client:
            if offered.is_relative_to(allowed):
                overlap.append(offered)
            elif allowed.is_relative_to(offered):
                overlap.append(allowed)
    return _unique(overlap)


def _is_too_broad(folder: Path) -> bool:
    if folder == Path(folder.anchor):
        return True
    try:
        home = _canonical(Path.home())
    except (RuntimeError, KeyError, OSError):
        # No resolvable home folder: nothing to compare against.
        return False
    return folder == home


def effective_roots(
    configured: Sequence[str | Path] | None,
    client: Sequence[str | Path] | None,
    cwd: str | Path | None = None,
) -> list[Path]:
    """The resolved folders a tool may use, deepest-wins intersection when both lists are given.

    `client` entries may be `file://` URIs or paths; other URIs are ignored, and so are roots
    holding a NUL or invalid text (with a logged warning). Raises FsError(PATH_NOT_ALLOWED,
    NO_ROOT) when nothing usable remains, or when every client root was such a broken one.
    """
    configured_roots, bad_configured = _canonical_roots(configured, source="configured")
    if bad_configured and not configured_roots:
        # Dropping the only configured root would silently widen access to the client's or the cwd.
        raise path_error("NO_ROOT", cause="invalid_configured_roots", ignored=bad_configured)
    client_roots, bad_client = _canonical_roots(client, source="client")
    if bad_client and not client_roots:
        # The client meant to narrow access; falling back to the cwd would widen it instead.
        raise path_error("NO_ROOT", cause="invalid_client_roots", ignored=bad_client)
    if configured_roots and client_roots:
        overlap = _intersect(configured_roots, client_roots)
        if not overlap:
            raise path_error(
                "NO_ROOT",
                cause="no_overlap",
                configured=[str(root) for root in configured_roots],
                client=[str(root) for root in client_roots],
            )
        return overlap
    if configured_roots or client_roots:
        return configured_roots or client_roots
    working_directory = _canonical(Path(cwd) if cwd is not None else Path.cwd())
    if _is_too_broad(working_directory):
        raise path_error("NO_ROOT", cause="implicit_root", cwd=str(working_directory))
    return [working_directory]
