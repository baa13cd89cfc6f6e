"""One error type for every file-system refusal or failure, with stable codes and bilingual advice.

Tools turn an `FsError` into the error envelope: `code` is the tool-level code the client sees,
`reason` says precisely what went wrong (stable, documented in the README), and `message` /
`hint` give a person a sentence (``hostd_errors.Text``, English and Simplified Chinese) saying
what to do next. It is a ``CodedError``, so the host answers it like any other.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from hostd_errors import CodedError, Reason, Text

__all__ = ["FsError", "fs_error_from_os"]


# Templates may use {path} (the quoted path, or a neutral word when there is none) and keys of
# the error's details. A missing key renders as "?" rather than failing: an error message must
# never raise.
_TEXTS: dict[str, Reason] = {
    "OUTSIDE_ROOTS": Reason(
        "PATH_NOT_ALLOWED",
        "The path {path} is outside the folders this server may use.",
        "路径 {path} 不在本服务允许使用的文件夹内。",
        "Use a path inside one of the allowed folders ({roots}), or add its folder to `allowed_roots` "
        "in the config.",
        "请使用允许的文件夹（{roots}）内的路径，或在配置文件的 allowed_roots 中加入它所在的文件夹。",
    ),
    "NO_ROOT": Reason(
        "PATH_NOT_ALLOWED",
        "There is no folder this server may write to.",
        "本服务没有可写入的文件夹。",
        "Set `allowed_roots` in the config to the folders the server may use.",
        "请在配置文件中设置 allowed_roots，列出本服务可以使用的文件夹。",
    ),
    "NO_ROOT/implicit_root": Reason(
        "PATH_NOT_ALLOWED",
        "There is no folder this server may write to.",
        "本服务没有可写入的文件夹。",
        "Set `allowed_roots` in the config to the folders the server may use (the working directory "
        "{cwd} is not used implicitly because it is the file-system root or your home folder).",
        "请在配置文件中设置 allowed_roots，列出本服务可以使用的文件夹（当前工作目录 {cwd} "
        "是文件系统根目录或主目录，不会被自动采用）。",
    ),
    "NO_ROOT/no_overlap": Reason(
        "PATH_NOT_ALLOWED",
        "The folders shared by the client do not overlap the configured `allowed_roots`.",
        "客户端共享的文件夹与配置的 allowed_roots 没有重叠。",
        "Client roots and allowed_roots do not overlap: open a folder in the IDE that lies inside "
        "`allowed_roots` ({configured}), or widen `allowed_roots` in the config.",
        "客户端根目录与 allowed_roots 没有重叠：请在 IDE 中打开位于 allowed_roots（{configured}）"
        "内的文件夹，或在配置文件中放宽 allowed_roots。",
    ),
    "NO_ROOT/invalid_client_roots": Reason(
        "PATH_NOT_ALLOWED",
        "None of the folders shared by the client can be used.",
        "客户端共享的文件夹都无法使用。",
        "The client's roots {ignored} hold a NUL character or invalid text and were ignored: open a "
        "regular folder in the IDE, or set `allowed_roots` in the config.",
        "客户端的根目录 {ignored} 含有 NUL 字符或无效文本，已被忽略：请在 IDE 中打开普通文件夹，"
        "或在配置文件中设置 allowed_roots。",
    ),
    "NUL_BYTE": Reason(
        "PATH_NOT_ALLOWED",
        "The path contains a NUL character.",
        "路径中包含 NUL 字符。",
        "Remove the NUL (\\0) character from the path.",
        "请删除路径中的 NUL（\\0）字符。",
    ),
    "INVALID_ENCODING": Reason(
        "INVALID_ARGUMENT",
        "The path {path} holds characters that are not valid Unicode text (lone surrogates).",
        "路径 {path} 包含无效的 Unicode 字符（孤立代理项）。",
        "Send the path as proper UTF-8 text; if the name came from a file listing, rename the file "
        "to a name that is valid UTF-8.",
        "请以正确的 UTF-8 文本发送路径；如果该名称来自文件列表，请把文件改名为有效的 UTF-8 名称。",
    ),
    "TOO_LONG": Reason(
        "PATH_TOO_LONG",
        "The path {path} is too long.",
        "路径 {path} 过长。",
        "Keep the whole path under 4096 bytes and each folder or file name under 255 bytes "
        "(a Chinese character takes 3 bytes); shorten the file name or use a shallower folder.",
        "整个路径需少于 4096 字节，每个文件夹名或文件名需少于 255 字节（一个汉字占 3 字节）；"
        "请缩短文件名或使用层级更浅的文件夹。",
    ),
    "TOO_LONG/too_deep": Reason(
        "PATH_TOO_LONG",
        "The path {path} is too deep: {depth} folders, the limit is {depth_limit}.",
        "路径 {path} 层级过深：共 {depth} 层文件夹，上限为 {depth_limit} 层。",
        "Use a path at most {depth_limit} folders deep; a shallower folder keeps it portable too.",
        "请使用不超过 {depth_limit} 层文件夹的路径；层级浅的路径在各系统上也更通用。",
    ),
    "HARD_LINK": Reason(
        "PATH_NOT_ALLOWED",
        "The file {path} is a hard link ({links} names share it), so writing it could change a file "
        "outside the allowed folders.",
        "文件 {path} 是硬链接（共有 {links} 个名称指向它），写入它可能会改动允许的文件夹之外的文件。",
        "Write to a new file name instead, or replace the hard link by a copy of the file (copy it, "
        "delete the original name, rename the copy).",
        "请改写到新的文件名，或把该硬链接换成文件的副本（复制文件、删除原名称、再把副本改回原名）。",
    ),
    "PATH_CHANGED": Reason(
        "PATH_NOT_ALLOWED",
        "A folder or file on the path {path} was replaced by a symbolic link while it was being used; "
        "nothing was written.",
        "使用路径 {path} 期间，其中的文件夹或文件被替换成了符号链接；未写入任何内容。",
        "Try again once the folder stops changing; a link that leads outside the allowed folders "
        "is always refused.",
        "请在该文件夹不再变动后重试；指向允许的文件夹之外的链接始终会被拒绝。",
    ),
    "FILE_TOO_LARGE": Reason(
        "TOO_LONG",
        "The file {path} is larger than the limit of {limit_bytes} bytes.",
        "文件 {path} 超过 {limit_bytes} 字节的上限。",
        "Split the file into smaller files, or pass a smaller one.",
        "请把文件拆分成较小的文件，或换一个较小的文件。",
    ),
    "DEVICE_FILE": Reason(
        "PATH_NOT_ALLOWED",
        "The path {path} is a device, not a regular file.",
        "路径 {path} 是设备文件，不是普通文件。",
        "Choose a regular file; devices are never read or written.",
        "请选择普通文件；本服务不会读写设备文件。",
    ),
    "FIFO": Reason(
        "PATH_NOT_ALLOWED",
        "The path {path} is a pipe or socket, not a regular file.",
        "路径 {path} 是管道或套接字，不是普通文件。",
        "Choose a regular file; pipes and sockets are never opened.",
        "请选择普通文件；本服务不会打开管道或套接字。",
    ),
    "RESERVED_NAME": Reason(
        "PATH_NOT_ALLOWED",
        "The name {name!r} cannot be used on every operating system.",
        "名称 “{name}” 无法在所有操作系统上使用。",
        "Rename it: Windows reserves CON, PRN, AUX, NUL, COM1-COM9 and LPT1-LPT9 (with any "
        "extension) and forbids names ending in a dot or a space.",
        "请改名：Windows 保留 CON、PRN、AUX、NUL、COM1-COM9、LPT1-LPT9（带任何扩展名均不可用），"
        "且名称不能以点或空格结尾。",
    ),
    "SYMLINK_LOOP": Reason(
        "INVALID_ARGUMENT",
        "The path {path} goes through a loop of symbolic links.",
        "路径 {path} 中的符号链接形成了循环。",
        "Fix or remove the symbolic link that points back to itself, or choose another path.",
        "请修复或删除指向自身的符号链接，或选择其他路径。",
    ),
    "IS_DIRECTORY": Reason(
        "INVALID_ARGUMENT",
        "The path {path} is a folder, but a file is needed.",
        "路径 {path} 是文件夹，但这里需要文件。",
        "Give the path of a file inside that folder, for example ending in a file name.",
        "请提供该文件夹内某个文件的路径，即以文件名结尾的路径。",
    ),
    "NOT_A_DIRECTORY": Reason(
        "INVALID_ARGUMENT",
        "The path {path} is not a folder, or a part of it is a file.",
        "路径 {path} 不是文件夹，或其中某一段是文件。",
        "Check each part of the path: every part before the last must be a folder.",
        "请检查路径的每一段：除最后一段外都必须是文件夹。",
    ),
    "EMPTY_PATH": Reason(
        "INVALID_ARGUMENT",
        "The path is empty.",
        "路径为空。",
        "Give a file path, for example `notes/summary.md`.",
        "请提供文件路径，例如 `notes/summary.md`。",
    ),
    "NOT_FOUND": Reason(
        "NOT_FOUND",
        "The path {path} does not exist.",
        "路径 {path} 不存在。",
        "Check the spelling, or create the folder first.",
        "请检查拼写，或先创建所在的文件夹。",
    ),
    "PERMISSION": Reason(
        "PERMISSION_DENIED",
        "Permission denied for {path}.",
        "没有访问 {path} 的权限。",
        "Check that you may write there and that no other program (an editor, a sync client) holds "
        "the file open, or choose another folder.",
        "请确认您对该位置有写权限，且没有其他程序（编辑器、同步客户端）正占用该文件，或换一个文件夹。",
    ),
    "READ_ONLY_FS": Reason(
        "PERMISSION_DENIED",
        "The disk holding {path} is mounted read-only.",
        "{path} 所在的磁盘是只读的。",
        "Choose a folder on a writable disk.",
        "请选择位于可写磁盘上的文件夹。",
    ),
    "NO_SPACE": Reason(
        "DISK_FULL",
        "The disk holding {path} is full (or your quota is used up).",
        "{path} 所在的磁盘已满（或配额已用完）。",
        "Free some space on that disk, then try again; the previous file was left unchanged.",
        "请清理该磁盘空间后重试；原有文件未被改动。",
    ),
    "IN_USE": Reason(
        "FILE_LOCKED",
        "The file {path} is in use by another program.",
        "文件 {path} 正被其他程序占用。",
        "Close the program that has the file open (an editor, a viewer, a sync client), then try again.",
        "请关闭正在使用该文件的程序（编辑器、查看器、同步客户端）后重试。",
    ),
    "LOCK_TIMEOUT": Reason(
        "FILE_LOCKED",
        "The file {path} stayed locked by another writer for {timeout} s.",
        "文件 {path} 被其他写入者锁定超过 {timeout} 秒。",
        "Another window or process is writing the same file; wait a moment and try again.",
        "另一个窗口或进程正在写入同一文件；请稍后重试。",
    ),
    "OS_ERROR": Reason(
        "WRITE_ERROR",
        "Writing {path} failed: {strerror} (errno {errno}).",
        "写入 {path} 失败：{strerror}（errno {errno}）。",
        "Check the disk and the path, then try again.",
        "请检查磁盘和路径后重试。",
    ),
    "OS_ERROR/read": Reason(
        "READ_ERROR",
        "Reading {path} failed: {strerror} (errno {errno}).",
        "读取 {path} 失败：{strerror}（errno {errno}）。",
        "Check the disk and the path, then try again.",
        "请检查磁盘和路径后重试。",
    ),
}

#: Every stable reason, for the README and for callers that want to validate one.
REASONS: frozenset[str] = frozenset(key.split("/")[0] for key in _TEXTS)

# Windows reports a file held open by another program as a sharing or lock violation.
_WINERROR_SHARING_VIOLATION = 32
_WINERROR_LOCK_VIOLATION = 33
_LONGEST_SHOWN_PATH = 200


class _Placeholders(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


class FsError(CodedError):
    """A file-system refusal or failure a tool reports to its caller.

    `code` is the tool-level error code, `reason` the finer stable cause; `details` carries
    machine-readable facts (limits, roots, errno) and, for the answer, the reason and path.
    `message` and `hint` are bilingual ``Text``; `str(error)` is the English message.
    """

    def __init__(
        self,
        code: str,
        reason: str,
        path: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        facts: dict[str, Any] = dict(details or {})
        text = _text_for(code, reason, facts)
        message = Text(
            en=_render(text.message_en, path, facts, False), zh=_render(text.message_zh, path, facts, True)
        )
        hint = Text(en=_render(text.hint_en, path, facts, False), zh=_render(text.hint_zh, path, facts, True))
        answer_details = {**facts, "reason": reason}
        if path is not None:
            answer_details.setdefault("path", path)
        super().__init__(code, message, hint=hint, details=answer_details)
        #: The facts the error was raised with (without the reason and path the answer adds).
        self.facts = facts

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.reason, self.path, self.facts))

    def __repr__(self) -> str:
        return f"FsError(code={self.code!r}, reason={self.reason!r}, path={self.path!r})"


def _text_for(code: str, reason: str, details: dict[str, Any]) -> Reason:
    variant = "read" if code == "READ_ERROR" else details.get("cause")
    return _TEXTS.get(f"{reason}/{variant}") or _TEXTS.get(reason) or _TEXTS["OS_ERROR"]


def _render(template: str, path: str | None, details: dict[str, Any], chinese: bool) -> str:
    if path is None:
        quoted = "该路径" if chinese else "the path"
    else:
        shown = _abbreviate(path)
        quoted = f"“{shown}”" if chinese else f"'{shown}'"
    values = _Placeholders({key: _display(value) for key, value in details.items()})
    values["path"] = quoted
    return template.format_map(values)


def _abbreviate(text: str) -> str:
    # A hostile 5,000-character path must not make a 5,000-character message.
    if len(text) <= _LONGEST_SHOWN_PATH:
        return text
    return f"{text[: _LONGEST_SHOWN_PATH // 2]}…{text[-_LONGEST_SHOWN_PATH // 4 :]}"


def _display(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "none"
    return value


def path_error(reason: str, path: str | None = None, **details: Any) -> FsError:
    """An FsError whose code is the one documented for `reason`."""
    return FsError(_TEXTS[reason].code, reason, path, details)


# By name, because not every platform defines every errno (Windows has no EDQUOT).
_REASON_BY_ERRNO_NAME = {
    "EACCES": "PERMISSION",
    "EPERM": "PERMISSION",
    "EROFS": "READ_ONLY_FS",
    "ENOSPC": "NO_SPACE",
    "EDQUOT": "NO_SPACE",
    "ENAMETOOLONG": "TOO_LONG",
    "EISDIR": "IS_DIRECTORY",
    "ENOTDIR": "NOT_A_DIRECTORY",
    "ELOOP": "SYMLINK_LOOP",
    "ENOENT": "NOT_FOUND",
    "EBUSY": "IN_USE",
    "ETXTBSY": "IN_USE",
}
_REASON_BY_ERRNO = {
    getattr(errno, name): reason for name, reason in _REASON_BY_ERRNO_NAME.items() if hasattr(errno, name)
}


def _reason_for_errno(exc: OSError) -> str | None:
    if getattr(exc, "winerror", None) in (_WINERROR_SHARING_VIOLATION, _WINERROR_LOCK_VIOLATION):
        return "IN_USE"
    return _REASON_BY_ERRNO.get(exc.errno) if exc.errno is not None else None


def fs_error_from_os(exc: OSError, path: str | Path | None, *, reading: bool = False) -> FsError:
    """Translate an OSError into an FsError with a stable code and reason.

    Unrecognised errors become WRITE_ERROR (or READ_ERROR when `reading`) with reason OS_ERROR
    and the errno in the details.
    """
    shown = None if path is None else str(path)
    reason = _reason_for_errno(exc)
    if reason is not None:
        return path_error(reason, shown, errno=exc.errno)
    return FsError(
        "READ_ERROR" if reading else "WRITE_ERROR",
        "OS_ERROR",
        shown,
        {"errno": exc.errno, "strerror": exc.strerror or str(exc)},
    )
