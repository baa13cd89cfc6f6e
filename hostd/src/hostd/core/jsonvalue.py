"""JSON as the API types it: what a cursor keeps as its position and what a record holds.

A module of its own because both ``hostd.paging`` and ``hostd.core.records`` speak of it and neither
should import the other.
"""

from __future__ import annotations

from typing import TypeAlias

#: Any JSON value: a number, text, a list or an object of JSON values, true/false or null.
JSONValue: TypeAlias = str | int | float | bool | list["JSONValue"] | dict[str, "JSONValue"] | None

__all__ = ["JSONValue"]
