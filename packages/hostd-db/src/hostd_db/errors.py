"""One error type for database failures a tool can explain: stable codes, bilingual advice.

It is a ``hostd_errors.CodedError`` like ``hostd_fs.FsError`` (``code``, ``message``, ``hint``,
``details``, plus the finer ``reason``), so the host renders every one the same way. Messages
name the database's host and port, never its password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hostd_errors import CodedError, Reason

__all__ = ["DatabaseError", "busy_as_file_locked"]

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


_TEXTS: dict[str, Reason] = {
    "unreachable": Reason(
        "UNAVAILABLE",
        "The database at {where} cannot be reached.",
        "无法连接位于 {where} 的数据库。",
        "Check that PostgreSQL is running and reachable from this machine, then retry; the server "
        "log (stderr) has the driver's message.",
        "请确认 PostgreSQL 正在运行且本机可以访问，然后重试；服务器日志（stderr）中有驱动程序的详细信息。",
    ),
    "connection_lost": Reason(
        "UNAVAILABLE",
        "The connection to the database at {where} was lost during the call.",
        "调用过程中与位于 {where} 的数据库的连接中断。",
        "Retry the call; if it keeps failing, check the database server. A write that was not "
        "acknowledged was not applied.",
        "请重试；如果持续失败，请检查数据库服务器。未被确认的写入不会生效。",
    ),
    "refused_now": Reason(
        "UNAVAILABLE",
        "The database at {where} could not take the call now ({state}).",
        "位于 {where} 的数据库暂时无法处理此次调用（{state}）。",
        "Retry in a moment: the database is overloaded or a lock it waits for is held; if it keeps "
        "failing, the server log (stderr) has the database's message. A write that failed was not applied.",
        "请稍后重试：数据库负载过高或其等待的锁被占用；如果持续失败，服务器日志（stderr）中有数据库的详细信息。"
        "失败的写入不会生效。",
    ),
    "statement_timeout": Reason(
        "TIMEOUT",
        "The database at {where} did not answer within {timeout_ms} ms.",
        "位于 {where} 的数据库未在 {timeout_ms} 毫秒内响应。",
        "Retry later, or narrow the request (a smaller limit or a more specific query).",
        "请稍后重试，或缩小请求范围（更小的 limit 或更具体的查询）。",
    ),
    "contention": Reason(
        "CONFLICT",
        "The database at {where} kept refusing the change because of concurrent changes "
        "({attempts} attempts).",
        "由于存在并发修改，位于 {where} 的数据库多次拒绝了此次修改（尝试 {attempts} 次）。",
        "Retry the call: another client was changing the same records.",
        "请重试：另一个客户端正在修改相同的记录。",
    ),
    "busy": Reason(
        "FILE_LOCKED",
        "The database file {where} stayed locked by another process for {timeout_ms} ms.",
        "数据库文件 {where} 被其他进程锁定超过 {timeout_ms} 毫秒。",
        "Another hostd process (another IDE window) is writing a lot; retry in a moment.",
        "另一个 hostd 进程（另一个 IDE 窗口）正在大量写入；请稍后重试。",
    ),
    "schema_too_new": Reason(
        "SCHEMA_TOO_NEW",
        "The {component} tables in {where} are at schema version {current}, but this hostd knows "
        "versions up to {known}.",
        "{where} 中 {component} 的数据表结构版本为 {current}，而此 hostd 只支持到版本 {known}。",
        "Upgrade hostd (and its plugins) to a release that knows schema version {current}; never "
        "run an older hostd against a newer database.",
        "请把 hostd（及其插件）升级到支持结构版本 {current} 的版本；不要用旧版 hostd 访问较新的数据库。",
    ),
    "schema_outdated": Reason(
        "SCHEMA_OUTDATED",
        "The {component} tables in {where} are at schema version {current}; this hostd needs {known}.",
        "{where} 中 {component} 的数据表结构版本为 {current}；此 hostd 需要版本 {known}。",
        "Run `hostd db migrate`, or start `hostd serve` with migrations enabled.",
        "请运行 `hostd db migrate`，或在启用迁移的情况下启动 `hostd serve`。",
    ),
}


class DatabaseError(CodedError):
    """A database failure with a stable ``code`` and ``reason`` and advice in two languages."""

    def __init__(self, reason: str, *, where: str, **details: Any) -> None:
        text = _TEXTS[reason]
        self.reason = reason
        facts: dict[str, Any] = {"where": where, **details}
        super().__init__(
            text.code,
            text.message(**facts),
            hint=text.hint(**facts),
            details={**facts, "reason": reason},
        )
        self._facts = facts

    def __reduce__(self) -> tuple[Any, ...]:
        facts = dict(self._facts)
        where = facts.pop("where")
        return (_rebuild_database_error, (self.reason, where, facts))


def _rebuild_database_error(reason: str, where: str, facts: dict[str, Any]) -> DatabaseError:
    return DatabaseError(reason, where=where, **facts)


@contextmanager
def busy_as_file_locked(where: str, timeout_ms: int) -> Iterator[None]:
    """Inside the block, SQLite's "database is locked/busy" becomes ``DatabaseError`` FILE_LOCKED.

    For SQLite stores (``SqliteDatabase`` waits ``timeout_ms`` before giving up): the file
    stayed locked by another process, which the caller can only retry, never an INTERNAL error.
    """
    import sqlite3

    try:
        yield
    except sqlite3.OperationalError as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        busy = code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED) if code is not None else None
        if busy is None:
            busy = "locked" in str(exc) or "busy" in str(exc)
        if not busy:
            raise
        raise DatabaseError("busy", where=where, timeout_ms=timeout_ms) from None
