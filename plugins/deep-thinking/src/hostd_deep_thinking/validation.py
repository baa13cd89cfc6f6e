"""pydantic's validation errors in Chinese: user template files and imports are checked with
pydantic models, which explain a refusal in English only. A ``zh`` server names the field and
says the reason with these words (the English keeps pydantic's own message)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Chinese for the validation errors a user's file or an import can meet, by pydantic error type.
ZH_REASONS: Mapping[str, str] = {
    "missing": "缺少该字段",
    "extra_forbidden": "未知字段",
    "string_too_short": "太短（至少 {min_length} 个字符）",
    "string_too_long": "太长（至多 {max_length} 个字符）",
    "too_short": "项数太少（至少 {min_length} 项）",
    "too_long": "项数太多（至多 {max_length} 项）",
    "string_type": "必须是文本",
    "string_pattern_mismatch": "格式不符（{pattern}）",
    "list_type": "必须是列表",
    "dict_type": "必须是映射（对象）",
    "model_type": "必须是对象",
    "model_attributes_type": "必须是对象",
    "int_type": "必须是整数",
    "int_parsing": "必须是整数",
    "int_from_float": "必须是整数",
    "float_type": "必须是数字",
    "float_parsing": "必须是数字",
    "bool_type": "必须是布尔值",
    "bool_parsing": "必须是布尔值",
    "greater_than_equal": "不能小于 {ge}",
    "greater_than": "必须大于 {gt}",
    "less_than_equal": "不能大于 {le}",
    "less_than": "必须小于 {lt}",
}


def reason_zh(error: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> str:
    """One pydantic error (``ValidationError.errors()`` item) said in Chinese; "取值无效" when unknown."""
    kind = str(error.get("type"))
    words = (overrides or {}).get(kind) or ZH_REASONS.get(kind, "取值无效")
    try:
        return words.format(**dict(error.get("ctx") or {}))
    except (KeyError, IndexError, ValueError):
        return "取值无效"
