"""Explaining argument errors to people, in the host's language.

pydantic says what is wrong in English; the model reading our answer needs the argument's
name, what was wrong and what a valid value looks like, in the language the host speaks.
"""

from __future__ import annotations

import json
from typing import Any

from hostd_errors import Text
from pydantic_core import ErrorDetails

# pydantic error type -> Chinese explanation; placeholders come from the error's ``ctx``.
ZH_REASONS: dict[str, str] = {
    "string_too_short": "长度至少为 {min_length} 个字符",
    "string_too_long": "长度至多为 {max_length} 个字符",
    "too_short": "至少需要 {min_length} 项",
    "too_long": "至多允许 {max_length} 项",
    "less_than_equal": "必须小于或等于 {le}",
    "less_than": "必须小于 {lt}",
    "greater_than_equal": "必须大于或等于 {ge}",
    "greater_than": "必须大于 {gt}",
    "int_parsing": "必须是整数",
    "int_type": "必须是整数",
    "int_from_float": "必须是整数",
    "float_parsing": "必须是数字",
    "float_type": "必须是数字",
    "bool_parsing": "必须是布尔值（true 或 false）",
    "bool_type": "必须是布尔值（true 或 false）",
    "string_type": "必须是字符串",
    "string_unicode": "必须是有效的 Unicode 字符串",
    "literal_error": "必须是以下之一：{expected}",
    "enum": "必须是以下之一：{expected}",
    "list_type": "必须是数组",
    "dict_type": "必须是对象",
    "model_type": "必须是对象",
    "string_pattern_mismatch": "必须匹配模式 {pattern}",
    "none_required": "必须为空（null）",
    "value_error": "取值无效",
    # Met in plugins' own files and imports (``hostd.validation_reason``); an argument's missing or
    # unknown key is explained by ``explain`` before these are read.
    "missing": "缺少该字段",
    "extra_forbidden": "未知字段",
    "model_attributes_type": "必须是对象",
}

ZH_KINDS = {
    "string": "字符串",
    "integer": "整数",
    "number": "数字",
    "boolean": "布尔值",
    "array": "数组",
    "object": "对象",
    "null": "null",
}


def reason(error: ErrorDetails, language: str) -> str:
    """Why the value was refused, without the argument's name.

    A plugin's own validator speaks both languages by raising ``ValueError(Text(...))``; any
    other message pydantic produced is English and is not shown in a Chinese answer.
    """
    raised = error.get("ctx", {}).get("error")
    if isinstance(raised, ValueError) and raised.args and isinstance(raised.args[0], Text):
        return raised.args[0].render(language).rstrip("。.")
    if language == "zh" and error["type"] in ZH_REASONS:
        try:
            ctx = {key: str(value).replace(" or ", " 或 ") for key, value in error.get("ctx", {}).items()}
            return ZH_REASONS[error["type"]].format(**ctx)
        except (KeyError, IndexError):
            pass
    if language == "zh":
        return "取值无效"
    return error["msg"]


def describe_valid(schema: dict[str, Any], argument: str, language: str) -> str:
    """A short 'what a valid value looks like', read from the argument's own schema."""
    properties = schema.get("properties", {})
    prop = properties.get(argument)
    if prop is None:
        names = ", ".join(sorted(properties)) or "-"
        return Text(en=f"valid arguments: {names}", zh=f"可用参数：{names}").render(language)
    definitions = schema.get("$defs", {})

    def resolved(option: dict[str, Any]) -> dict[str, Any]:
        """A shared definition (``$ref`` into ``$defs``) read through, the option's own keys kept."""
        ref = option.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return {**definitions.get(ref.rsplit("/", 1)[-1], {}), **option}
        return option

    prop = resolved(prop)
    parts: list[str] = []
    for option in [prop, *(resolved(o) for o in prop.get("anyOf", []))]:
        if "enum" in option:
            values = ", ".join(json.dumps(v, ensure_ascii=False) for v in option["enum"])
            parts.append(Text(en=f"one of {values}", zh=f"以下之一：{values}").render(language))
        if "const" in option:
            parts.append(json.dumps(option["const"], ensure_ascii=False))
        kind = option.get("type")
        if kind and "enum" not in option:
            bounds = _bounds(option, language)
            name = ZH_KINDS.get(kind, kind) if language == "zh" else kind
            parts.append(name + (f" ({', '.join(bounds)})" if bounds else ""))
    valid = Text(en=" or ", zh=" 或 ").render(language).join(dict.fromkeys(p for p in parts if p)) or "-"
    # Parameter descriptions are written in English (they are the tool's schema): a Chinese
    # answer says what is valid from the schema's facts alone.
    description = prop.get("description", "") if language != "zh" else ""
    text = Text(en=f"'{argument}' expects {valid}", zh=f"'{argument}' 需要：{valid}").render(language)
    return text + (f": {description}" if description else "")


def _bounds(option: dict[str, Any], language: str) -> list[str]:
    bounds = [
        f"{word} {option[key]}"
        for key, word in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        )
        if key in option
    ]
    words = {
        "minLength": ("at least {} characters", "至少 {} 个字符"),
        "maxLength": ("at most {} characters", "至多 {} 个字符"),
        "minItems": ("at least {} items", "至少 {} 项"),
        "maxItems": ("at most {} items", "至多 {} 项"),
        "pattern": ("matching {}", "匹配 {}"),
    }
    for key, (en, zh) in words.items():
        if key in option:
            bounds.append(Text(en=en, zh=zh).render(language).format(option[key]))
    return bounds


def explain(
    errors: list[ErrorDetails], schema: dict[str, Any], language: str
) -> tuple[str, str, dict[str, Any]]:
    """The message, hint and details of an INVALID_ARGUMENT answer for these errors."""
    first = errors[0]
    argument = ".".join(str(part) for part in first["loc"]) or "(arguments)"
    top = str(first["loc"][0]) if first["loc"] else ""
    kind = first["type"]
    if kind == "missing":
        message = Text(
            en=f"Missing required argument '{argument}'.", zh=f"缺少必填参数 '{argument}'。"
        ).render(language)
    elif kind == "extra_forbidden":
        message = Text(en=f"Unknown argument '{argument}'.", zh=f"未知参数 '{argument}'。").render(language)
    else:
        why = reason(first, language)
        message = Text(
            en=f"Invalid argument '{argument}': {why}.", zh=f"参数 '{argument}' 无效：{why}。"
        ).render(language)
    hint = describe_valid(schema, "" if kind == "extra_forbidden" else top, language)
    details = {
        "argument": argument,
        "problem": kind,
        "errors": [
            {
                "argument": ".".join(str(p) for p in e["loc"]),
                "problem": e["type"],
                "message": reason(e, language),
            }
            for e in errors[:10]
        ],
    }
    return message, hint, details
