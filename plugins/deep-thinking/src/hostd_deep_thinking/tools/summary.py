"""``summarize_session``: what a session amounts to, from its structure, or written by the
client's own model when it offers MCP sampling.

The structural parts (stages, conclusions, revisions, counts) live in ``summary.py`` and are
always returned; only the Markdown ``summary`` may come from the client's model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from hostd import Text
from hostd_deep_thinking.models import Notice, SummaryOutput
from hostd_deep_thinking.store import SessionState, session_store
from hostd_deep_thinking.tools.common import Context, SessionId, load_state, notice
from hostd_deep_thinking.tools.templates import find_template


def summarize_session(
    ctx: Context,
    session_id: SessionId,
    use_sampling: Annotated[
        bool,
        Field(description="Let the client's model write it (false: structural summary)"),
    ] = True,
) -> SummaryOutput:
    """Summarize a session: stages, conclusions, revisions, open branches; written by the client's model when
    it offers sampling.
    """
    from hostd_deep_thinking import summary

    state = load_state(ctx, session_id)
    with session_store(ctx).session_lock(session_id):
        # A copy: the state may grow under another call while the summary is written.
        state = SessionState(
            meta=dict(state.meta),
            thoughts=list(state.thoughts),
            adjustments=list(state.adjustments),
            branches=dict(state.branches),
        )
    template = find_template(ctx, state.meta.get("template_id"))
    spans = summary.stages(state, template, ctx.language)
    ends = summary.conclusions(state)
    notes = summary.revisions(state)
    numbers = summary.counts(state, notes)
    open_branches = [end.branch_id for end in ends if end.branch_id is not None and not end.final]
    text = summary.to_markdown(state, ctx.language, spans, ends, notes, numbers)
    summarizer: Literal["sampling", "structural"] = "structural"
    model = None
    warnings: list[Notice] = []
    # Nothing is written before this point: on the 2026-07-28 protocol the tool runs again from the
    # start once the client's model has answered, and asks the same question (it depends on the session).
    if use_sampling and ctx.can_sample and state.thoughts:
        answer = ctx.sample_sync(
            summary.sampling_prompt(state, ctx.language),
            system="You write faithful, concise summaries of a person's step-by-step reasoning.",
            max_tokens=1200,
        )
        if answer.available and answer.text and answer.text.strip():
            text, summarizer, model = answer.text.strip() + "\n", "sampling", answer.model
        else:
            reason = answer.reason or Text(en="empty answer", zh="空回答")
            warnings.append(
                notice(
                    "SAMPLING_FAILED",
                    Text(
                        en=f"The client's model did not write the summary ({reason.en}); "
                        "this is the structural summary.",
                        zh=f"客户端模型未生成摘要（{reason.zh}）；以下为根据会话结构生成的摘要。",
                    ),
                )
            )
    return SummaryOutput(
        session_id=session_id,
        summarizer=summarizer,
        model=model,
        summary=text,
        stages=spans,
        conclusions=ends,
        revisions=notes,
        open_branches=open_branches,
        counts=numbers,
        warnings=warnings,
    ).with_message(
        Text(
            en=f"Summary of '{session_id}' ({numbers.thoughts} thoughts), written by "
            + (
                "the client's model."
                if summarizer == "sampling"
                else "the server from the session's structure."
            ),
            zh=f"会话 '{session_id}'（{numbers.thoughts} 条思考）的摘要，"
            + ("由客户端模型撰写。" if summarizer == "sampling" else "由服务器根据会话结构生成。"),
        )
    )
