"""The text type and the error protocol every part of hostd shares."""

from __future__ import annotations

import pickle

import pytest
from hostd_errors import CodedError, Reason, Text, render, render_details


def test_text_renders_per_language_and_fills_placeholders() -> None:
    text = Text(en="No memory {uri}.", zh="没有记忆 {uri}。").format(uri="mem://a")
    assert text == Text(en="No memory mem://a.", zh="没有记忆 mem://a。")
    assert text.render("zh") == "没有记忆 mem://a。"
    assert text.render("zh-CN") == "没有记忆 mem://a。"
    assert text.render("en") == "No memory mem://a."
    assert text.render("fr") == "No memory mem://a."
    assert Text(en="{missing}", zh="{missing}").format() == Text(en="?", zh="?")


def test_a_text_value_fills_each_sentence_in_its_language() -> None:
    clause = Text(en=" until noon", zh="（至中午）")
    text = Text(en="Held{until}; {n} left.", zh="已领取{until}；剩 {n} 个。").format(until=clause, n=2)
    assert text == Text(en="Held until noon; 2 left.", zh="已领取（至中午）；剩 2 个。")


def test_text_concatenates_and_joins_with_each_languages_separator() -> None:
    joined = Text.join([Text(en="a", zh="甲"), Text(en="b", zh="乙")])
    assert joined == Text(en="a; b", zh="甲；乙")
    assert Text(en="x", zh="叉") + "!" == Text(en="x!", zh="叉!")
    assert "(" + Text(en="x", zh="叉") == Text(en="(x", zh="(叉")
    assert render("plain", "zh") == "plain"
    assert render(None, "zh") is None


def test_coded_error_renders_message_hint_and_text_in_details() -> None:
    error = CodedError(
        "NOT_FOUND",
        Text(en="Missing.", zh="不存在。"),
        hint=Text(en="List first.", zh="请先列出。"),
        details={"field": Text(en="title", zh="标题"), "nested": [{"why": Text(en="a", zh="甲")}], "n": 3},
    )
    assert str(error) == "Missing."
    assert error.rendered("zh") == (
        "不存在。",
        "请先列出。",
        {"field": "标题", "nested": [{"why": "甲"}], "n": 3},
    )
    assert render_details(error.details, "en")["field"] == "title"


def test_a_plain_string_message_reads_the_same_in_both_languages() -> None:
    error = CodedError("CONFLICT", "v2")
    assert error.message == Text(en="v2", zh="v2")
    assert error.hint is None


@pytest.mark.parametrize("code", ["", "lower", "HAS SPACE", "Mixed_Case"])
def test_codes_are_upper_snake(code: str) -> None:
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        CodedError(code, "x")


class _Subclass(CodedError):
    def __init__(self, reason: str) -> None:
        super().__init__("WRITE_ERROR", Text(en=f"failed: {reason}", zh=f"失败：{reason}"))
        self.reason = reason


def test_errors_survive_pickling_with_every_field() -> None:
    copy = pickle.loads(pickle.dumps(_Subclass("disk")))
    assert isinstance(copy, _Subclass)
    assert (copy.code, copy.reason, copy.message, str(copy)) == (
        "WRITE_ERROR",
        "disk",
        Text(en="failed: disk", zh="失败：disk"),
        "failed: disk",
    )


def test_a_reason_fills_its_templates_in_both_languages() -> None:
    reason = Reason("TIMEOUT", "Took {ms} ms.", "用时 {ms} 毫秒。", "Retry in {s} s.", "{s} 秒后重试。")
    assert reason.message(ms=5) == Text(en="Took 5 ms.", zh="用时 5 毫秒。")
    assert reason.hint() == Text(en="Retry in ? s.", zh="? 秒后重试。")


def test_the_shared_stop_words_are_lower_case_english_words() -> None:
    """memory and wechat compare them with lower-cased words: a capital or a space would never match."""
    from hostd_errors.stopwords import ENGLISH_STOP_WORDS

    assert len(ENGLISH_STOP_WORDS) == 63
    odd = [word for word in ENGLISH_STOP_WORDS if not (word.isascii() and word.isalpha() and word.islower())]
    assert odd == []
