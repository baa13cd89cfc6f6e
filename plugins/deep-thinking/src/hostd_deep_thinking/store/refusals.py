"""What a sessions store refuses: a table of ``Reason`` by reason name, and the errors raised from it.

Both stores (files and the team database) raise these where they find the condition; each is
a ``ToolError`` with its code, a bilingual message and hint from ``REFUSALS``, so no tool
translates store exceptions. They stay classes because tools catch some of them for control
flow (a deleted default session starts a new one) and may give a sharper hint where their own
arguments offer a way out.
"""

from __future__ import annotations

from typing import Any

from hostd_errors import Reason

from hostd import Text, ToolError

#: Reason name -> code, message and hint in both languages.
REFUSALS: dict[str, Reason] = {
    "session_not_found": Reason(
        "NOT_FOUND",
        "No session '{session_id}'.",
        "没有会话 '{session_id}'。",
        "list_sessions shows the sessions that exist.",
        "list_sessions 可列出现有会话。",
    ),
    "session_exists": Reason(
        "ALREADY_EXISTS",
        "Session '{session_id}' already exists.",
        "会话 '{session_id}' 已存在。",
        "Pass overwrite=true to replace it (a backup of it is taken first), or export it before restoring.",
        "传入 overwrite=true 以替换它（会先备份），或先导出再恢复。",
    ),
    "backup_not_found": Reason(
        "NOT_FOUND",
        "No {backup}.",
        "没有{backup}。",
        "details.backups lists this session's backups; without any, only an export "
        "(import_session) can bring it back.",
        "details.backups 列出该会话的备份；若没有备份，只能用导出文件（import_session）恢复。",
    ),
    "session_unreadable": Reason(
        "READ_ERROR",
        "Session '{session_id}' is damaged and no backup or journal can rebuild it: {problem}.",
        "会话 '{session_id}' 已损坏，且没有可用于重建的备份或日志（详情见 details.problem）。",
        "The damaged file is kept as it is. Restore it with restore_session (overwrite=true) from "
        "the plugin's backups or import_session from an export, or delete_session to start over "
        "(the file is kept under another name).",
        "损坏的文件已原样保留。可用 restore_session（overwrite=true）从插件的备份恢复，"
        "或用 import_session 从导出文件恢复，或用 delete_session 重新开始（文件会改名保留）。",
    ),
}


class StoreError(ToolError):
    """A condition of the stored sessions that the caller can act on: ``REFUSALS[reason]`` filled."""

    def __init__(self, reason: str, details: dict[str, Any], **values: Any) -> None:
        entry = REFUSALS[reason]
        super().__init__(entry.code, entry.message(**values), hint=entry.hint(**values), details=details)


class SessionNotFound(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__("session_not_found", {"session_id": session_id}, session_id=session_id)
        self.session_id = session_id


class SessionExists(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__("session_exists", {"session_id": session_id}, session_id=session_id)
        self.session_id = session_id


class BackupNotFound(StoreError):
    """No (readable, matching) backup of the session; ``available`` names its backups, newest first."""

    def __init__(self, session_id: str, available: list[str], backup: str | None = None) -> None:
        what = (
            Text(
                en=f"backup '{backup}' of session '{session_id}'", zh=f"会话 '{session_id}' 的备份 '{backup}'"
            )
            if backup
            else Text(en=f"backup of session '{session_id}'", zh=f"会话 '{session_id}' 的备份")
        )
        details = {"session_id": session_id, "backups": available}
        super().__init__("backup_not_found", details, backup=what)
        self.session_id = session_id
        self.available = available


class SessionUnreadable(StoreError):
    """The document is damaged and neither a backup nor the journal can rebuild it."""

    def __init__(self, session_id: str, problem: str, kept_at: str | None) -> None:
        details = {"session_id": session_id, "file": kept_at, "problem": problem}
        super().__init__("session_unreadable", details, session_id=session_id, problem=problem)
        self.session_id = session_id
        self.problem = problem
        self.kept_at = kept_at
