"""Argument errors in a Chinese answer: a plugin validator's own words, never pydantic's English."""

from __future__ import annotations

from typing import Annotated

import pytest
from hostd.core.arguments import describe_valid, explain
from hostd_errors import Text
from pydantic import AfterValidator, BaseModel, ValidationError


def _even(value: int) -> int:
    if value % 2:
        raise ValueError(Text(en="must be even", zh="必须是偶数"))
    return value


def _english_only(value: str) -> str:
    if value == "bad":
        raise ValueError("an English-only refusal")
    return value


class _Arguments(BaseModel):
    count: Annotated[int, AfterValidator(_even)] = 0
    name: Annotated[str, AfterValidator(_english_only)] = ""


def _errors(**arguments: object) -> list:  # type: ignore[type-arg]
    with pytest.raises(ValidationError) as caught:
        _Arguments.model_validate(arguments)
    return caught.value.errors()


def test_a_validator_raising_text_speaks_the_servers_language() -> None:
    schema = _Arguments.model_json_schema()
    zh_message, _, zh_details = explain(_errors(count=3), schema, "zh")
    en_message, _, _ = explain(_errors(count=3), schema, "en")
    assert zh_message == "参数 'count' 无效：必须是偶数。"
    assert zh_details["errors"][0]["message"] == "必须是偶数"
    assert en_message == "Invalid argument 'count': must be even."


def test_english_validator_text_is_not_shown_in_chinese() -> None:
    message, _, details = explain(_errors(name="bad"), _Arguments.model_json_schema(), "zh")
    assert message == "参数 'name' 无效：取值无效。"
    assert "English" not in str(details)


def test_chinese_hints_leave_out_the_english_parameter_description() -> None:
    schema = {"properties": {"limit": {"type": "integer", "maximum": 100, "description": "Items per page"}}}
    assert describe_valid(schema, "limit", "zh") == "'limit' 需要：整数 (<= 100)"
    assert describe_valid(schema, "limit", "en") == "'limit' expects integer (<= 100): Items per page"
