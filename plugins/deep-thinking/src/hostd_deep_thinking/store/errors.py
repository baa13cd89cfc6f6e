"""What a sessions store refuses, as the errors the caller sees.

Both stores (files and the team database) raise these where they find the condition; each is
a ``ToolError`` with its code, a bilingual message and hint, so no tool translates store
exceptions. Tools still catch some of them for control flow (a deleted default session starts
a new one) and may give a sharper hint where their own arguments offer a way out.
"""

from __future__ import annotations

from hostd import Text, ToolError


class StoreError(ToolError):
    """A condition of the stored sessions that the caller can act on."""


class SessionNotFound(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            "NOT_FOUND",
            Text(en=f"No session '{session_id}'.", zh=f"没有会话 '{session_id}'。"),
            hint=Text(en="list_sessions shows the sessions that exist.", zh="list_sessions 可列出现有会话。"),
            details={"session_id": session_id},
        )
        self.session_id = session_id


class SessionExists(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            "ALREADY_EXISTS",
            Text(en=f"Session '{session_id}' already exists.", zh=f"会话 '{session_id}' 已存在。"),
            hint=Text(
                en="Pass overwrite=true to replace it (a backup of it is taken first), "
                "or export it before restoring.",
                zh="传入 overwrite=true 以替换它（会先备份），或先导出再恢复。",
            ),
            details={"session_id": session_id},
        )
        self.session_id = session_id


class BackupNotFound(StoreError):
    """No (readable, matching) backup of the session; ``available`` names its backups, newest first."""

    def __init__(self, session_id: str, available: list[str], backup: str | None = None) -> None:
        what = (
            Text(
                en=f"backup '{backup}' of session '{session_id}'",
                zh=f"会话 '{session_id}' 的备份 '{backup}'",
            )
            if backup
            else Text(en=f"backup of session '{session_id}'", zh=f"会话 '{session_id}' 的备份")
        )
        super().__init__(
            "NOT_FOUND",
            Text(en="No ", zh="没有") + what + Text(en=".", zh="。"),
            hint=Text(
                en="details.backups lists this session's backups; without any, only an export "
                "(import_session) can bring it back.",
                zh="details.backups 列出该会话的备份；若没有备份，只能用导出文件（import_session）恢复。",
            ),
            details={"session_id": session_id, "backups": available},
        )
        self.session_id = session_id
        self.available = available


class SessionUnreadable(StoreError):
    """The document is damaged and neither a backup nor the journal can rebuild it."""

    def __init__(self, session_id: str, problem: str, kept_at: str | None) -> None:
        super().__init__(
            "READ_ERROR",
            Text(
                en=f"Session '{session_id}' is damaged and no backup or journal can rebuild it: {problem}.",
                zh=f"会话 '{session_id}' 已损坏，且没有可用于重建的备份或日志（详情见 details.problem）。",
            ),
            hint=Text(
                en="The damaged file is kept as it is. Restore it with restore_session (overwrite=true) from "
                "the plugin's backups or import_session from an export, or delete_session to start over "
                "(the file is kept under another name).",
                zh="损坏的文件已原样保留。可用 restore_session（overwrite=true）从插件的备份恢复，"
                "或用 import_session 从导出文件恢复，或用 delete_session 重新开始（文件会改名保留）。",
            ),
            details={"session_id": session_id, "file": kept_at, "problem": problem},
        )
        self.session_id = session_id
        self.problem = problem
        self.kept_at = kept_at


class WouldBlock(Exception):
    """A non-blocking append found work that should not run on the event loop (wait, load, create)."""
