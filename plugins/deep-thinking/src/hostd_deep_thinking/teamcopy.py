"""``hostd db copy`` for deep-thinking: the session files of this data folder into the team database.

Each session is copied with its thoughts (revisions, branches, labels), adjustments, metadata,
links in ``metadata`` and its backups (so ``restore_session`` still finds a deleted session's
last copy). Nothing in the team database is overwritten: a session or backup it holds
differently is reported as a conflict. The default-session pointer is not copied: on the team
database it is shared, and one user's default is not the team's.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from hostd import CopyReport, PluginContext, Text
from hostd_deep_thinking.store import SessionStore, SessionUnreadable, session_store
from hostd_deep_thinking.store.documents import check_document

if TYPE_CHECKING:
    from hostd_deep_thinking.models import Settings
    from hostd_deep_thinking.store.postgres import PostgresSessionStore


def _count(counts: dict[str, int], kind: str, how_many: int) -> None:
    if how_many:
        counts[kind] = counts.get(kind, 0) + how_many


def _local_backups(
    files: SessionStore, session_id: str, report: CopyReport, plugin: PluginContext[Settings]
) -> list[tuple[str, dict[str, Any]]]:
    readable = []
    for path in files.backups(session_id):
        try:
            readable.append((path.name, check_document(json.loads(path.read_bytes()))))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            report.conflicts.append(
                plugin.render(
                    Text(
                        en=f"backup {path.name} of session '{session_id}' is damaged and was not copied "
                        f"({exc})",
                        zh=f"会话 '{session_id}' 的备份 {path.name} 已损坏，未复制（{exc}）",
                    )
                )
            )
    return readable


def copy_local_sessions(plugin: PluginContext[Settings]) -> CopyReport | None:
    """Copy every local session and backup into the team database; a second run reports everything
    unchanged. ``None`` without ``storage``: the sessions already are the local ones."""
    from hostd_deep_thinking.store.postgres import PostgresSessionStore

    team = session_store(plugin)
    if not isinstance(team, PostgresSessionStore):
        return None
    return _copy_into(plugin, team)


def _copy_into(plugin: PluginContext[Settings], team: PostgresSessionStore) -> CopyReport:
    report = CopyReport()
    if not (plugin.data_dir / "sessions").is_dir():
        return report
    files = SessionStore(plugin.data_dir)
    try:
        rows = files.list_summaries(None, sys.maxsize).rows
        live = {str(row["session_id"]) for row in rows}
        backed_up = {folder.name for folder in files.layout.backups_dir.iterdir() if folder.is_dir()}
        for session_id in sorted(live | backed_up):
            document = None
            if session_id in live:
                try:
                    state = files.load(session_id)
                    document = None if state is None else state.to_document()
                except SessionUnreadable as exc:
                    report.conflicts.append(
                        plugin.render(
                            Text(
                                en=f"session '{session_id}' is damaged locally and was not copied "
                                f"({exc.problem})",
                                zh=f"会话 '{session_id}' 在本地已损坏，未复制（{exc.problem}）",
                            )
                        )
                    )
            outcome = team.copy_in(session_id, document, _local_backups(files, session_id, report, plugin))
            if outcome.session == "copied":
                _count(report.copied, "sessions", 1)
                _count(report.copied, "thoughts", outcome.thoughts_copied)
            elif outcome.session == "unchanged":
                _count(report.unchanged, "sessions", 1)
            elif outcome.session == "conflict":
                report.conflicts.append(
                    plugin.render(
                        Text(
                            en=f"session '{session_id}' differs in the team database; "
                            "it was left as it is there",
                            zh=f"会话 '{session_id}' 在团队数据库中的内容不同，已保持团队数据库中的版本不变",
                        )
                    )
                )
            _count(report.copied, "backups", outcome.backups_copied)
            _count(report.unchanged, "backups", outcome.backups_unchanged)
            for name in outcome.differing_backups:
                report.conflicts.append(
                    plugin.render(
                        Text(
                            en=f"backup {name} of session '{session_id}' differs in the team database",
                            zh=f"会话 '{session_id}' 的备份 {name} 在团队数据库中的内容不同",
                        )
                    )
                )
    finally:
        files.close()
    return report
