"""Length limits on text checked with ``len()``, answered exactly as pydantic's own limits are.

pydantic checks ``min_length``/``max_length`` of a ``str`` on its UTF-8 form, and CPython keeps
that UTF-8 copy inside every non-ASCII string it was made for, for the string's whole life: a
30 MB Chinese argument, or the thoughts of an imported session, then held a second, larger
copy of themselves until they were dropped. ``TextLength`` counts characters with ``len()``
(the same count: code points) and raises pydantic's own error types, messages and context, so
an answer to a too-long or too-short value, or one holding a lone surrogate, does not change.

The host applies it to every tool argument declared as ``str`` (or ``str | None``) with
``min_length``/``max_length``; plugins use it in their own models of large text, e.g.
``content: Annotated[str, TextLength(min_length=1, max_length=10_000)]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

#: A lone surrogate cannot be encoded as UTF-8; pydantic refuses such text (``string_unicode``).
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_UNICODE = "Input should be a valid string, unable to parse raw data as a unicode string"


def _characters(count: int) -> str:
    return "character" if count == 1 else "characters"


@dataclass(frozen=True)
class TextLength:
    """``Annotated`` metadata for a ``str`` (or ``str | None``): its length limits, in characters."""

    min_length: int | None = None
    max_length: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        for option in [json_schema, *json_schema.get("anyOf", [])]:
            if option.get("type") == "string":
                if self.max_length is not None:
                    option["maxLength"] = self.max_length
                if self.min_length is not None:
                    option["minLength"] = self.min_length
        return json_schema

    def check(self, value: object) -> object:
        """``value`` unchanged, or pydantic's error for text that is not Unicode or too short or long."""
        if not isinstance(value, str):
            return value  # None, for an optional argument
        if not value.isascii() and _SURROGATE.search(value) is not None:
            raise PydanticCustomError("string_unicode", _NOT_UNICODE)
        length = len(value)
        if self.min_length is not None and length < self.min_length:
            raise PydanticCustomError(
                "string_too_short",
                f"String should have at least {{min_length}} {_characters(self.min_length)}",
                {"min_length": self.min_length},
            )
        if self.max_length is not None and length > self.max_length:
            raise PydanticCustomError(
                "string_too_long",
                f"String should have at most {{max_length}} {_characters(self.max_length)}",
                {"max_length": self.max_length},
            )
        return value
