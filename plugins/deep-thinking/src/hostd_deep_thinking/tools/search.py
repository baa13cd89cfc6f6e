"""``search_thoughts``: full-text search over every session's thoughts (or one session's).

The index is ``search.db`` beside the files (SQLite FTS5) or the team database's ``tsvector``s;
``store.searcher_for`` picks it. Pages follow the ranking: a cursor holds how many hits were
already shown, bound to the query and the session searched.
"""

from __future__ import annotations

from typing import Annotated, cast

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, encode_cursor
from pydantic import Field

from hostd import Text, ToolError
from hostd_deep_thinking.models import SESSION_ID_PATTERN, SearchOutput, ThoughtHit, ThoughtType
from hostd_deep_thinking.store import searcher_for
from hostd_deep_thinking.tools.common import Context, load_state

MAX_QUERY_CHARS = 1000


def search_thoughts(
    ctx: Context,
    query: Annotated[
        str,
        Field(
            description=f"Plain-text words, at most {MAX_QUERY_CHARS} characters",
            min_length=1,
        ),
    ],
    session_id: Annotated[
        str | None,
        Field(description="Only this session", pattern=SESSION_ID_PATTERN),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> SearchOutput:
    """Full-text search (BM25) over the thoughts of every session or one, Chinese or English, with a snippet
    per hit.
    """
    from hostd_deep_thinking.search import plan_query, snippet

    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(
            "TOO_LONG",
            Text(
                en=f"query has {len(query)} characters; at most {MAX_QUERY_CHARS} are searched.",
                zh=f"query 有 {len(query)} 个字符；最多可搜索 {MAX_QUERY_CHARS} 个。",
            ),
            hint=Text(
                en="Search for a few distinctive words instead of a whole text.",
                zh="请只搜索几个有代表性的词，而不是整段文字。",
            ),
            details={"argument": "query", "limit_chars": MAX_QUERY_CHARS},
        )
    plan = plan_query(query)
    if plan is None:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="query holds no letters, digits or Chinese characters to search for.",
                zh="query 中没有可搜索的字母、数字或汉字。",
            ),
            hint=Text(en="Give some words to look for.", zh="请给出要查找的词。"),
            details={"argument": "query"},
        )
    if session_id is not None:
        load_state(ctx, session_id)  # NOT_FOUND / READ_ERROR rather than an empty answer
    filters = {"query": query, "session_id": session_id}
    position = decode_cursor(cursor, "search_thoughts", filters)
    offset = position if isinstance(position, int) and position > 0 else 0
    # Ranked hits have no keyset: a page is the next ``limit`` of the ranking, asked again.
    ranked, truncated, strict = searcher_for(ctx).search(plan, session_id, offset + limit)
    hits = ranked[offset:]
    found = [
        ThoughtHit(
            session_id=hit.session_id,
            session_name=hit.session_name,
            thought_number=hit.thought_number,
            sequence=hit.sequence,
            type=cast(ThoughtType, hit.kind),  # written from a checked thought's type
            branch_id=hit.branch_id,
            stage=hit.stage,
            tags=hit.tags,
            snippet=snippet(hit.content, plan.terms),
            score=hit.score,
        )
        for hit in hits
    ]
    return SearchOutput(
        query=query,
        terms=plan.terms,
        matched="all_terms" if strict else "any_term",
        hits=found,
        truncated=truncated,
        next_cursor=encode_cursor("search_thoughts", filters, offset + len(found)) if truncated else None,
    ).with_message(
        Text(
            en=f"{len(found)}{'+' if truncated else ''} thought(s) found for {query!r}.",
            zh=f"找到 {len(found)}{'+' if truncated else ''} 条与 {query!r} 相关的思考。",
        )
    )
