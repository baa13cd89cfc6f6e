"""Files opened beneath a root's folder descriptor, so a folder swapped for a symlink cannot lead
a write (or a read) out of the roots.

`resolve_in_roots` checks a path at one instant; a folder inside a root replaced a moment later
by a symlink to elsewhere would still take a write addressed by path. So a tool resolves once
into a `RootedPath` (a root and the names below it, none of them a symlink at that time) and
every open, create, rename and read walks those names one at a time from a descriptor of the
root, each step `openat(O_NOFOLLOW | O_DIRECTORY)`: a name that has become a symlink since is
refused (reason PATH_CHANGED), never followed. Missing folders are made the same way, with
`mkdirat` beneath the parent's descriptor, and temp files are renamed within that descriptor.

Where the OS offers no `*at()` calls (Windows), the same steps run on joined paths with a
symlink check before each: that catches mistakes, but not an attacker racing the checks.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hostd_fs.durable import current_umask, fsync_directory, write_all
from hostd_fs.errors import fs_error_from_os, path_error
from hostd_fs.paths import Expectation, locate_in_roots, refuse_special_file

__all__ = ["RootedPath", "anchored", "read_beneath", "replace_beneath", "resolve_beneath", "stat_beneath"]

#: Whether this platform can walk a path from folder descriptors (every POSIX system Python
#: supports); when False the path-based fallback described above is used.
HAS_DIR_FD = (
    {os.open, os.mkdir, os.rename, os.stat, os.unlink} <= os.supports_dir_fd
    and hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
# O_NONBLOCK: a pipe planted after the check must not hang the open (no effect on regular files).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_FOLDER_FLAGS = _ROOT_FLAGS | _NOFOLLOW
# What openat answers for a symlink under O_NOFOLLOW: ELOOP on Linux, EMLINK on FreeBSD, and
# ENOTDIR when O_DIRECTORY is checked first.
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})
_NEW_FILE_MODE = 0o644
# Enough of the target's name to tell whose temp file it is, short enough to stay under the
# 255-byte name limit even in a multibyte script.
_TEMP_NAME_CHARS = 40


@dataclass(frozen=True)
class RootedPath:
    """A path inside a root, as the root and the names below it (no `.`, `..` or symlinks).

    The write and read functions of this package re-open it beneath the root's descriptor;
    `str()` and `.path` give the absolute path to show a person.
    """

    root: Path
    names: tuple[str, ...]
    shown: str = field(default="", compare=False)

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.names)

    @property
    def name(self) -> str:
        return self.names[-1] if self.names else self.root.name

    def __str__(self) -> str:
        return str(self.path)

    def exists(self) -> bool:
        """Whether something is at this name now (looked up beneath the root, not followed)."""
        return stat_beneath(self) is not None


class _PathChanged(Exception):
    """A name that resolved to a folder or file is a symlink now: refuse, never follow."""


@contextlib.contextmanager
def _translated(target: RootedPath, *, reading: bool = False) -> Iterator[None]:
    """Turn what the walk raises into FsError naming the absolute path."""
    shown = str(target.path)
    try:
        yield
    except _PathChanged:
        raise path_error("PATH_CHANGED", shown) from None
    except OSError as exc:
        raise fs_error_from_os(exc, shown, reading=reading) from exc


class _Folder:
    """One open folder of the walk: its descriptor where `*at()` calls exist, else only its path."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def open_root(cls, root: Path) -> _Folder:
        # The root itself was resolved from the config or the client: it is trusted as named.
        if not HAS_DIR_FD:
            if not stat.S_ISDIR(os.stat(root).st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(root))
            return cls(root, None)
        return cls(root, os.open(root, _ROOT_FLAGS))

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _at(self, name: str) -> tuple[str, dict[str, int]]:
        if self.fd is None:
            return str(self.path / name), {}
        return name, {"dir_fd": self.fd}

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry `name` itself (a symlink is not followed), or None when there is none."""
        where, how = self._at(name)
        try:
            return os.stat(where, follow_symlinks=False, **how)
        except FileNotFoundError:
            return None

    def _refuse_if_symlink(self, name: str, exc: OSError, *, wanted_folder: bool = False) -> None:
        """Raise _PathChanged when `exc` came from a symlink at `name`.

        The entry is looked at again after the failed open, so it may have changed once more:
        a folder found where opening a folder just failed was swapped too.
        """
        if exc.errno in _SYMLINK_ERRNOS:
            with contextlib.suppress(OSError):
                entry = self.lstat(name)
                if entry is not None and (
                    stat.S_ISLNK(entry.st_mode) or (wanted_folder and stat.S_ISDIR(entry.st_mode))
                ):
                    raise _PathChanged(name) from None

    def child(self, name: str, *, create: bool) -> _Folder:
        """The sub-folder `name`, made first when missing and `create` is set."""
        try:
            return self._open_child(name)
        except FileNotFoundError:
            if not create:
                raise
        where, how = self._at(name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(where, 0o777, **how)
        return self._open_child(name)

    def _open_child(self, name: str) -> _Folder:
        if self.fd is None:
            entry = self.lstat(name)
            if entry is None:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(self.path / name))
            if stat.S_ISLNK(entry.st_mode):
                raise _PathChanged(name)
            if not stat.S_ISDIR(entry.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(self.path / name))
            return _Folder(self.path / name, None)
        try:
            fd = os.open(name, _FOLDER_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            self._refuse_if_symlink(name, exc, wanted_folder=True)
            raise
        return _Folder(self.path / name, fd)

    def open_file(self, name: str, flags: int, mode: int = 0o666) -> int:
        """Open the file `name` in this folder; a symlink there is refused, not followed."""
        where, how = self._at(name)
        if self.fd is None:
            entry = self.lstat(name)
            if entry is not None and stat.S_ISLNK(entry.st_mode):
                raise _PathChanged(name)
        try:
            return os.open(where, flags | _NOFOLLOW | _CLOEXEC | _BINARY, mode, **how)
        except OSError as exc:
            self._refuse_if_symlink(name, exc)
            raise

    def rename(self, source: str, destination: str) -> None:
        if self.fd is None:
            os.replace(self.path / source, self.path / destination)
        else:
            os.rename(source, destination, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        where, how = self._at(name)
        os.unlink(where, **how)

    def sync(self) -> None:
        """Persist new entries of this folder (a rename, a created file)."""
        if self.fd is None:
            fsync_directory(self.path)
            return
        with contextlib.suppress(OSError):
            os.fsync(self.fd)


@contextlib.contextmanager
def _walk(root: Path, names: Sequence[str], *, create: bool) -> Iterator[_Folder]:
    """The folder `root/names...`, opened one name at a time from the root's descriptor."""
    folder = _Folder.open_root(root)
    try:
        for name in names:
            child = folder.child(name, create=create)
            folder.close()
            folder = child
        yield folder
    finally:
        folder.close()


def _parent_of(target: RootedPath, *, create: bool) -> contextlib.AbstractContextManager[_Folder]:
    if not target.names:
        raise path_error("IS_DIRECTORY", str(target.path))
    return _walk(target.root, target.names[:-1], create=create)


def resolve_beneath(
    path: str,
    roots: Sequence[Path],
    *,
    allow_missing: bool = True,
    expect: Expectation = "file",
    create_folders: bool = False,
) -> RootedPath:
    """`resolve_in_roots`, answered as a `RootedPath` the write and read functions re-open safely.

    The root is the outermost effective root holding the target, so every name an attacker
    inside the roots could swap is walked without following links. With `create_folders`,
    the missing parent folders (and, for `expect="dir"`, the folder itself) are made beneath
    the root's descriptor; the writers make missing parents anyway.
    """
    target, resolved_roots = locate_in_roots(path, roots, allow_missing=allow_missing, expect=expect)
    root = min((root for root in resolved_roots if target.is_relative_to(root)), key=lambda r: len(r.parts))
    rooted = RootedPath(root, target.relative_to(root).parts, shown=path)
    if create_folders:
        folders = rooted.names if expect == "dir" else rooted.names[:-1]
        with _translated(rooted), _walk(rooted.root, folders, create=True):
            pass
    return rooted


def anchored(path: str | os.PathLike[str] | RootedPath) -> RootedPath:
    """`path` as a RootedPath; a plain path is resolved (symlinks followed) and anchored at its folder.

    Plain paths are for a plugin's own data files, which no client chooses.
    """
    if isinstance(path, RootedPath):
        return path
    real = Path(os.path.realpath(path))
    return RootedPath(real.parent, (real.name,), shown=os.fspath(path))


def refuse_unwritable(entry: os.stat_result, shown: str, *, writing: bool = True) -> None:
    """Refuse what a user file must not be: a symlink swapped in, a folder, a device, a hard link.

    A write to a regular file with several links would change the other names too, possibly
    files outside the roots; replacing it would silently split them, so both are refused.
    """
    if stat.S_ISLNK(entry.st_mode):
        raise _PathChanged(shown)
    if stat.S_ISDIR(entry.st_mode):
        raise path_error("IS_DIRECTORY", shown)
    refuse_special_file(entry.st_mode, shown)
    if writing and entry.st_nlink > 1:
        raise path_error("HARD_LINK", shown, links=entry.st_nlink)


def stat_beneath(target: RootedPath) -> os.stat_result | None:
    """The entry at `target` (not followed), or None when nothing is there."""
    with _translated(target, reading=True):
        if not target.names:
            return os.stat(target.root)
        try:
            with _parent_of(target, create=False) as folder:
                return folder.lstat(target.name)
        except FileNotFoundError:
            return None


def _match_metadata(fd: int, folder: _Folder, temp_name: str, existing: os.stat_result | None) -> None:
    """Give the temp file the permissions (and, when allowed, the owner) of the file it replaces."""
    mode = stat.S_IMODE(existing.st_mode) if existing else _NEW_FILE_MODE & ~current_umask()
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(folder.path / temp_name, mode)
    if existing and hasattr(os, "fchown"):
        # Only a privileged process may give a file away; anyone else keeps their own ownership.
        with contextlib.suppress(OSError):
            os.fchown(fd, existing.st_uid, existing.st_gid)


def replace_beneath(target: RootedPath, payload: bytes | Iterable[bytes]) -> tuple[int, bool]:
    """Replace `target` atomically and durably beneath its root; returns (bytes, created).

    The temp file is made, written, fsynced and renamed within the parent folder's descriptor,
    so the rename cannot land anywhere else; missing parent folders are made the same way.
    `payload` may come in pieces (an iterable of bytes), so a large file is never whole in
    memory; should the iterable raise, the temp file goes and the old file stays.
    """
    shown = str(target.path)
    with _translated(target), _parent_of(target, create=True) as folder:
        existing = folder.lstat(target.name)
        if existing is not None:
            refuse_unwritable(existing, shown)
        temp_name = f".{target.name[:_TEMP_NAME_CHARS]}.{secrets.token_hex(4)}.tmp"
        fd = folder.open_file(temp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                written = 0
                for piece in [payload] if isinstance(payload, bytes) else payload:
                    write_all(fd, piece)
                    written += len(piece)
                _match_metadata(fd, folder, temp_name, existing)
                os.fsync(fd)
            finally:
                os.close(fd)
            folder.rename(temp_name, target.name)
        except BaseException:
            with contextlib.suppress(OSError):
                folder.unlink(temp_name)
            raise
        folder.sync()
    return written, existing is None


def append_beneath(
    target: RootedPath, make_chunk: Callable[[int], bytes], *, fsync: bool
) -> tuple[int, int, bool]:
    """Append `make_chunk(size)` to `target` beneath its root; returns (bytes, previous size, created).

    The caller holds the file's lock. The link count and kind are checked on the opened
    descriptor; a failed write is cut back to the previous size (a created file is removed).
    """
    shown = str(target.path)
    with _translated(target), _parent_of(target, create=True) as folder:
        existing = folder.lstat(target.name)
        if existing is not None:
            refuse_unwritable(existing, shown)
        created = existing is None
        # O_EXCL when creating: a name planted between the lookup and the open (a hard link to
        # a file outside) fails the open instead of being appended to as "new".
        flags = os.O_WRONLY | os.O_APPEND | _NONBLOCK | (os.O_CREAT | os.O_EXCL if created else 0)
        try:
            fd = folder.open_file(target.name, flags, 0o666)
        except FileExistsError:
            raise _PathChanged(shown) from None
        try:
            opened = os.fstat(fd)
            refuse_unwritable(opened, shown)
            previous_size = opened.st_size
            chunk = make_chunk(previous_size)
            if not isinstance(chunk, bytes | bytearray):
                raise TypeError(f"make_chunk must return bytes, got {type(chunk).__name__}")
            try:
                write_all(fd, bytes(chunk))
                if fsync:
                    # The data and the new size are what an append must keep; fdatasync skips
                    # the timestamps (where the OS offers it) and is the cheaper flush.
                    getattr(os, "fdatasync", os.fsync)(fd)
            except OSError:
                # Under the lock nobody else appended, so cutting back to the old size restores
                # the file exactly as it was.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, previous_size)
                raise
        except BaseException:
            if created:
                with contextlib.suppress(OSError):
                    folder.unlink(target.name)
            raise
        finally:
            os.close(fd)
        if created and fsync:
            folder.sync()
    return len(chunk), previous_size, created


def read_beneath(target: RootedPath, *, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file `target`, read beneath its root.

    More than `max_bytes` is FsError(TOO_LONG, FILE_TOO_LARGE), checked on the opened file and
    again while reading (it may grow meanwhile).
    """
    shown = str(target.path)
    with _translated(target, reading=True), _parent_of(target, create=False) as folder:
        existing = folder.lstat(target.name)
        if existing is None:
            raise path_error("NOT_FOUND", shown)
        refuse_unwritable(existing, shown, writing=False)
        fd = folder.open_file(target.name, os.O_RDONLY | _NONBLOCK)
        try:
            opened = os.fstat(fd)
            refuse_unwritable(opened, shown, writing=False)
            if max_bytes is not None and opened.st_size > max_bytes:
                raise path_error("FILE_TOO_LARGE", shown, limit_bytes=max_bytes)
            chunks: list[bytes] = []
            total = 0
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
                total += len(chunk)
                if max_bytes is not None and total > max_bytes:
                    raise path_error("FILE_TOO_LARGE", shown, limit_bytes=max_bytes)
        finally:
            os.close(fd)
    return b"".join(chunks)
