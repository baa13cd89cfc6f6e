"""Paging, once for every tool: one opaque cursor, one answer shape, one limit range.

A listing tool takes ``limit: Limit = DEFAULT_LIMIT`` (or its own default within 1 to
``MAX_LIMIT``, such as 10 for a search whose answers are long) and ``cursor: Cursor = None``, returns a
model derived from ``Page`` (``next_cursor``, ``truncated``), and turns positions into cursors
with ``encode_cursor``/``decode_cursor``. A cursor is URL-safe base64 of a small JSON object
naming the listing, a fingerprint of the filters it was made for, and where the last page
stopped (a keyset position where the listing has one, so pages stay stable while data
changes). A cursor from another listing, other filters or no listing at all is refused with
one error: INVALID_ARGUMENT, ``details.argument == "cursor"``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Annotated, TypeVar

from hostd_errors import Text
from pydantic import BaseModel, Field

from hostd.api import ToolOutput
from hostd.core.errors import ToolError
from hostd.core.jsonvalue import JSONValue  # a position is any JSON value (a number, a key, a list of them)

#: Every listing's page size: 1 to ``MAX_LIMIT`` items, ``DEFAULT_LIMIT`` when not given.
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: Longest cursor accepted: ours are far shorter; anything longer is not one of ours.
MAX_CURSOR_LENGTH = 2048

Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Page size")]
Cursor = Annotated[
    str | None,
    Field(
        max_length=MAX_CURSOR_LENGTH,
        description="The previous page's next_cursor",
    ),
]

#: Room kept for the envelope's own keys and an answer's small fields when filling a size budget.
ENVELOPE_ALLOWANCE = 1500

ItemT = TypeVar("ItemT", bound=BaseModel)


class Page(ToolOutput):
    """The paging fields of a listing's answer; a listing's output model derives from it."""

    next_cursor: str | None = Field(
        default=None,
        description="Pass as `cursor` (same other arguments) for the next page; null at the end.",
    )
    truncated: bool = Field(default=False, description="True when more items exist than this page holds.")


def fingerprint(filters: object) -> str:
    """A short digest of the arguments a cursor is bound to (everything but limit and cursor)."""
    raw = json.dumps(filters, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def encode_cursor(listing: str, filters: object, position: JSONValue) -> str:
    """The cursor that resumes ``listing`` (with these ``filters``) after ``position``."""
    raw = json.dumps(
        {"l": listing, "f": fingerprint(filters), "p": position}, ensure_ascii=False, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, listing: str, filters: object) -> JSONValue:
    """The position saved in ``cursor`` (``None`` for no cursor: the first page).

    Raises ``ToolError`` INVALID_ARGUMENT when the cursor is malformed or was made for another
    listing or other filters.
    """
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise bad_cursor("malformed") from None
    if not isinstance(data, dict) or "p" not in data:
        raise bad_cursor("malformed")
    if data.get("l") != listing:
        raise bad_cursor("other_listing")
    if data.get("f") != fingerprint(filters):
        raise bad_cursor("other_filters")
    position: JSONValue = data["p"]
    return position


def int_position(position: JSONValue) -> int | None:
    """A decoded position that must be a whole number of at least 0 (an offset, a row id), or None
    for the first page. A cursor is not signed: a made-up one holding anything else is refused
    (``bad_cursor``), never answered INTERNAL."""
    if position is None:
        return None
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise bad_cursor("malformed")
    return position


def bad_cursor(reason: str = "malformed") -> ToolError:
    """The one answer to a cursor that is not this listing's (also for a position a listing cannot use)."""
    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en="This cursor does not belong to this listing with these arguments.",
            zh="该游标不属于本列表及这组参数。",
        ),
        hint=Text(
            en="Pass next_cursor exactly as the previous answer gave it, with the same other arguments; "
            "or repeat the request without a cursor to start again.",
            zh="请原样传入上一次回答中的 next_cursor，并保持其他参数不变；或不带游标重新请求，从头开始。",
        ),
        details={"argument": "cursor", "reason": reason},
    )


def size_of(model: BaseModel, language: str = "en") -> int:
    """Characters the model adds to the JSON answer (its ``hostd.Text`` fields written in ``language``)."""
    return len(model.model_dump_json(context={"language": language})) + 2


def fill_within_budget(
    items: Iterable[ItemT], budget: int, *, size: Callable[[ItemT], int] = size_of
) -> tuple[list[ItemT], bool]:
    """Take items while they fit in ``budget`` characters; the first always goes in.

    Returns the items taken and whether some were left out.
    """
    taken: list[ItemT] = []
    used = 0
    for item in items:
        cost = size(item)
        if taken and used + cost > budget:
            return taken, True
        taken.append(item)
        used += cost
    return taken, False


__all__ = [
    "DEFAULT_LIMIT",
    "ENVELOPE_ALLOWANCE",
    "MAX_LIMIT",
    "Cursor",
    "JSONValue",
    "Limit",
    "Page",
    "bad_cursor",
    "decode_cursor",
    "encode_cursor",
    "fill_within_budget",
    "fingerprint",
    "int_position",
    "size_of",
]
