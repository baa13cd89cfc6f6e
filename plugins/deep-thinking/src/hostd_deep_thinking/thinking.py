"""The rules of one sequential-thinking step: validation, thought type, references, totals.

Kept apart from storage and transport so the rules read like the issue: the official
server's behaviour (the total is raised to ``thoughtNumber``), plus what durable sessions
add (``needsMoreThoughts`` adds 10, never past 1,000; every raise is recorded; references
to labels the session does not hold are accepted with a warning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hostd_db import utc_stamp

from hostd import Text, ToolError
from hostd_deep_thinking.models import MAX_THOUGHTS, NEEDS_MORE_STEP
from hostd_deep_thinking.store import SessionState


@dataclass(frozen=True)
class Remark:
    """A warning about a stored thought (code and message); the tool renders it into the answer."""

    code: str
    message: Text


@dataclass(frozen=True)
class ThoughtRequest:
    """One ``sequential_thinking`` call's arguments, in Python names."""

    thought: str
    next_thought_needed: bool
    thought_number: int
    total_thoughts: int
    is_revision: bool = False
    revises_thought: int | None = None
    branch_from_thought: int | None = None
    branch_id: str | None = None
    needs_more_thoughts: bool = False
    stage: str | None = None
    tags: tuple[str, ...] = field(default=())
    by: str | None = None
    """The calling member, recorded with the thought so a shared session says who thought what."""

    @property
    def is_branch(self) -> bool:
        return self.branch_id is not None and self.branch_from_thought is not None

    @property
    def thought_type(self) -> str:
        if self.is_revision:
            return "revision"
        return "branch" if self.is_branch else "regular"

    @property
    def starts_conversation(self) -> bool:
        """A first thought that is neither revision nor branch: without session_id it opens a new session."""
        return (
            self.thought_number == 1
            and not self.is_revision
            and self.branch_from_thought is None
            and self.branch_id is None
        )


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SEPARATORS = re.compile(r"[\s_-]+")


def label_key(label: str) -> str:
    """How stages and tags compare: case and spacing aside ('Problem definition' == 'problem_definition')."""
    return _SEPARATORS.sub(" ", label).strip().casefold()


def clean_labels(stage: str | None, tags: list[str] | None) -> tuple[str | None, tuple[str, ...]]:
    """A thought's optional ``stage`` and ``tags``, trimmed and de-duplicated; control characters refused."""
    for argument, value in [("stage", stage), *(("tags", tag) for tag in tags or [])]:
        if value is not None and (_CONTROL.search(value) or not value.strip()):
            raise ToolError(
                "INVALID_ARGUMENT",
                Text(
                    en=f"{argument} must be visible text without control characters.",
                    zh=f"{argument} 必须是可见文本，不能含控制字符。",
                ),
                hint=Text(
                    en="Use a short label such as 'analysis' or 'risk'.",
                    zh="请使用简短标签，例如 'analysis' 或 'risk'。",
                ),
                details={"argument": argument},
            )
    kept: dict[str, str] = {}
    for tag in tags or []:
        kept.setdefault(label_key(tag), tag.strip())
    return (stage.strip() if stage is not None else None), tuple(kept.values())


def check_request(request: ThoughtRequest) -> None:
    """Refuse combinations the stored thought could not make sense of, naming the field to fix."""
    if request.is_revision and request.revises_thought is None:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="isRevision is true but revisesThought is missing.",
                zh="isRevision 为 true，但缺少 revisesThought。",
            ),
            hint=Text(
                en="Set revisesThought to the thoughtNumber being revised, or set isRevision to false.",
                zh="把 revisesThought 设为被修订思考的 thoughtNumber，或把 isRevision 设为 false。",
            ),
            details={"argument": "revisesThought", "problem": "missing"},
        )
    if request.branch_id is not None and request.branch_from_thought is None:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="branchId is set but branchFromThought is missing.",
                zh="设置了 branchId，但缺少 branchFromThought。",
            ),
            hint=Text(
                en="Set branchFromThought to the thoughtNumber the branch starts from, "
                "or leave branchId out.",
                zh="把 branchFromThought 设为分支起点的 thoughtNumber，或去掉 branchId。",
            ),
            details={"argument": "branchFromThought", "problem": "missing"},
        )


def answered_total(request: ThoughtRequest) -> tuple[int, str | None, bool]:
    """The total to answer, why it differs from the client's, and whether the cap cut it."""
    total, reason = request.total_thoughts, None
    if request.thought_number > total:
        total, reason = request.thought_number, "thought_number_exceeds_total"
    if request.needs_more_thoughts:
        total, reason = total + NEEDS_MORE_STEP, "needs_more_thoughts"
    return min(total, MAX_THOUGHTS), reason, total > MAX_THOUGHTS


def plan_thought(
    state: SessionState, request: ThoughtRequest
) -> tuple[dict[str, Any], dict[str, Any] | None, list[Remark]]:
    """The thought to store next in ``state``, the raise of the total it causes, and warnings."""
    status = state.meta.get("status", "active")
    if status == "archived":
        raise ToolError(
            "CONFLICT",
            Text(en=f"Session '{state.session_id}' is archived.", zh=f"会话 '{state.session_id}' 已归档。"),
            hint=Text(
                en="Call resume_session (or update_session_status with status 'active') to continue it.",
                zh="先调用 resume_session（或 update_session_status 设为 active）再继续。",
            ),
            details={"session_id": state.session_id, "status": status},
        )
    if len(state.thoughts) >= MAX_THOUGHTS:
        raise ToolError(
            "TOO_LONG",
            Text(
                en=f"Session '{state.session_id}' already holds {MAX_THOUGHTS} thoughts, "
                "the most a session keeps.",
                zh=f"会话 '{state.session_id}' 已有 {MAX_THOUGHTS} 条思考，达到单个会话的上限。",
            ),
            hint=Text(
                en="Conclude with nextThoughtNeeded=false, or continue in a new session.",
                zh="请以 nextThoughtNeeded=false 收尾，或在新会话中继续。",
            ),
            details={"session_id": state.session_id, "limit": MAX_THOUGHTS},
        )
    notices: list[Remark] = []
    now = utc_stamp()
    seq = state.last_seq + 1

    def resolve(label: int | None, field_name: str) -> int | None:
        if label is None:
            return None
        found = state.latest_by_label.get(label)
        if found is None:
            notices.append(
                Remark(
                    code="DANGLING_REFERENCE",
                    message=Text(
                        en=f"{field_name}={label}: this session holds no thought with that number; "
                        "it is kept and drawn as a dangling reference.",
                        zh=f"{field_name}={label}：本会话没有该编号的思考；已保留，并在图中标为悬空引用。",
                    ),
                )
            )
        return found

    revises_seq = resolve(request.revises_thought, "revisesThought")
    branch_from_seq = resolve(request.branch_from_thought, "branchFromThought")
    if request.revises_thought is not None and not request.is_revision:
        notices.append(
            Remark(
                code="REVISES_WITHOUT_FLAG",
                message=Text(
                    en="revisesThought is set but isRevision is false: stored as a regular thought.",
                    zh="设置了 revisesThought，但 isRevision 为 false：按常规思考保存。",
                ),
            )
        )
    if request.branch_from_thought is not None and request.branch_id is None:
        notices.append(
            Remark(
                code="BRANCH_WITHOUT_ID",
                message=Text(
                    en="branchFromThought is set without branchId: not recorded as a branch "
                    "(give a branchId).",
                    zh="设置了 branchFromThought 但没有 branchId：未记为分支（请提供 branchId）。",
                ),
            )
        )
    if status == "completed":
        notices.append(
            Remark(
                code="SESSION_COMPLETED",
                message=Text(
                    en="The session is marked completed; the thought was added anyway.",
                    zh="该会话已标记为完成；思考仍已添加。",
                ),
            )
        )
    total, reason, capped = answered_total(request)
    if capped:
        notices.append(
            Remark(
                code="TOTAL_CAPPED",
                message=Text(
                    en=f"totalThoughts is capped at {MAX_THOUGHTS}.",
                    zh=f"totalThoughts 上限为 {MAX_THOUGHTS}。",
                ),
            )
        )
    previous = state.meta.get("total_thoughts")
    base = int(previous) if isinstance(previous, int) else min(request.total_thoughts, MAX_THOUGHTS)
    adjustment = None
    if total > base:
        adjustment = {
            "time": now,
            "from_total": base,
            "to_total": total,
            "reason": reason or "client_raised_total",
            "sequence": seq,
        }
    thought = {
        "seq": seq,
        "thought_number": request.thought_number,
        "content": request.thought,
        "type": request.thought_type,
        "is_revision": request.is_revision,
        "revises_thought": request.revises_thought,
        "revises_seq": revises_seq,
        "branch_from_thought": request.branch_from_thought,
        "branch_from_seq": branch_from_seq,
        "branch_id": request.branch_id,
        "total_thoughts": total,
        "next_thought_needed": request.next_thought_needed,
        "needs_more_thoughts": request.needs_more_thoughts,
        "timestamp": now,
    }
    # Only when sent: a client of the official server's fields stores exactly what it did before.
    if request.stage is not None:
        thought["stage"] = request.stage
    if request.tags:
        thought["tags"] = list(request.tags)
    if request.by is not None:
        thought["by"] = request.by
    return thought, adjustment, notices
