"""Length limits of text arguments: pydantic's answers, without the UTF-8 copy pydantic keeps."""

from __future__ import annotations

import tracemalloc
from typing import Annotated, Any

import pytest
from hostd.core.tools import _input_model, input_schema_of
from pydantic import ConfigDict, Field, ValidationError, create_model

from hostd import TextLength

FIELDS: dict[str, Any] = {
    "text": (Annotated[str, Field(description="Some text", min_length=1, max_length=5)], ...),
    "note": (Annotated[str | None, Field(description="A note", max_length=1)], None),
    "code": (Annotated[str, Field(description="A code", pattern="^[a-z]+$", max_length=3)], "abc"),
}


def errors_or_values(model: Any, arguments: dict[str, Any]) -> Any:
    try:
        return model.model_validate(arguments).model_dump()
    except ValidationError as exc:
        return exc.errors(include_url=False)


@pytest.mark.parametrize(
    "arguments",
    [
        {"text": ""},
        {"text": "abcdef"},
        {"text": "好好好好好好"},
        {"text": "ab\udc00"},  # a lone surrogate: not Unicode text
        {"text": 5},
        {"text": "ok", "note": "xy"},
        {"text": "ok", "note": None},
        {"text": "ok", "code": "ABCD"},  # a pattern too: pydantic's own check, its order of errors
        {"text": "好"},
    ],
)
def test_the_host_answers_text_limits_exactly_as_pydantic(arguments: dict[str, Any]) -> None:
    plain = create_model("plain", __config__=ConfigDict(extra="forbid"), **FIELDS)
    assert errors_or_values(_input_model("t", FIELDS), arguments) == errors_or_values(plain, arguments)


def test_the_input_schema_keeps_the_limits() -> None:
    plain = create_model("plain", __config__=ConfigDict(extra="forbid"), **FIELDS)
    assert input_schema_of(_input_model("t", FIELDS)) == input_schema_of(plain)


def test_a_long_chinese_argument_is_checked_without_a_utf8_copy() -> None:
    """pydantic's own max_length check left a UTF-8 copy (3 bytes a character) inside the string."""
    model = _input_model("t", {"text": (Annotated[str, Field(description="d", max_length=3_000_000)], ...)})
    text = "思考" * 1_000_000  # 2,000,000 characters, 4 MB in memory, 6 MB as UTF-8
    tracemalloc.start()
    try:
        validated = model.model_validate({"text": text})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert validated.text is text  # type: ignore[attr-defined]
    assert peak < 1_000_000


def test_text_length_in_a_plugin_model() -> None:
    from pydantic import BaseModel

    class Thought(BaseModel):
        content: Annotated[str, TextLength(min_length=1, max_length=4)]

    assert Thought.model_json_schema()["properties"]["content"] == {
        "maxLength": 4,
        "minLength": 1,
        "title": "Content",
        "type": "string",
    }
    with pytest.raises(ValidationError) as caught:
        Thought(content="五个中文字")
    assert caught.value.errors(include_url=False, include_input=False) == [
        {
            "type": "string_too_long",
            "loc": ("content",),
            "msg": "String should have at most 4 characters",
            "ctx": {"max_length": 4},
        }
    ]
