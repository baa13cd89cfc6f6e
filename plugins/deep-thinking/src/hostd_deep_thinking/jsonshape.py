"""Limits on free-form JSON kept in sessions (metadata, imports).

A value nested deeper than the answer serializer can go, holding NaN/Infinity (which
JSON cannot carry) or a lone surrogate (which JSON may spell, ``"\\udc00"``, but no UTF-8
file or database can keep), would be stored and then break every answer that shows it, so such
values are refused where they come in and treated as damage where they are read.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

#: How deep free-form values (metadata) may nest: far below the serializer's limit (~255).
MAX_NESTING = 32

Problem = Literal["too_deep", "not_finite", "not_unicode"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def shape_problem(value: Any, max_depth: int = MAX_NESTING) -> Problem | None:
    """Why ``value`` cannot be kept as JSON, or ``None``; iterative, so any depth is safe to check."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return "too_deep"
            if isinstance(item, dict) and any(
                isinstance(key, str) and _LONE_SURROGATE.search(key) for key in item
            ):
                return "not_unicode"
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
        elif isinstance(item, float) and not math.isfinite(item):
            return "not_finite"
        elif isinstance(item, str) and _LONE_SURROGATE.search(item):
            return "not_unicode"
    return None


def refuse_constant(name: str) -> Any:
    """``parse_constant`` for ``json.loads``: NaN and Infinity are not JSON."""
    raise NotFiniteNumber(name)


class NotFiniteNumber(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name
