"""Answers that stay within a size budget, and the cursors that fetch the rest.

A cursor is opaque to the model: URL-safe base64 of a small JSON object naming the listing
it belongs to, a fingerprint of that listing's filters, and where the last page stopped
(a keyset position, never an offset, so pages stay stable while memories change).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

#: Room kept for the envelope's own keys and the answer's small fields.
ENVELOPE_ALLOWANCE = 1500


class BadCursor(ValueError):
    """A cursor that is malformed or belongs to another listing or other filters."""


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, default=str).encode()).hexdigest()[:12]


def encode_cursor(kind: str, filters: str, position: Any) -> str:
    raw = json.dumps({"k": kind, "f": filters, "p": position}, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str, filters: str) -> Any:
    """The position stored in ``cursor``, checked to belong to this listing and these filters."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error) as exc:
        raise BadCursor("malformed") from exc
    if not isinstance(data, dict) or "p" not in data:
        raise BadCursor("malformed")
    if data.get("k") != kind:
        raise BadCursor("other_listing")
    if data.get("f") != filters:
        raise BadCursor("other_filters")
    return data["p"]


def size_of(model: BaseModel) -> int:
    """Characters the model adds to the JSON answer."""
    return len(model.model_dump_json()) + 2


def fill_within_budget(
    items: Iterable[T], budget: int, *, size: Callable[[T], int] = size_of
) -> tuple[list[T], bool]:
    """Take items while they fit; the first always goes in (callers shorten oversized ones).

    Returns the items taken and whether some were left out.
    """
    taken: list[T] = []
    used = 0
    for item in items:
        cost = size(item)
        if taken and used + cost > budget:
            return taken, True
        taken.append(item)
        used += cost
    return taken, False


def clip(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True
