"""Deciding what kind of page came back: an article, or one of WeChat's message pages.

WeChat answers 200 for deleted, removed, expired and rate-limited articles and for its
captcha page, so the status code says little. Message pages put their sentence in
``.weui-msg__title`` (or a bare ``.mesg-block``); the captcha page renders its text with
JavaScript and is known by its template markers. Every article page's own scripts mention
违规 and 已删除 somewhere, so phrases are only looked for in message elements, or in the
raw page when it has no article layout at all: never a bare word anywhere in an article.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

#: The path WeChat redirects to when it wants a human to solve a captcha.
CAPTCHA_PATH = "/mp/wappoc_appmsgcaptcha"

_CAPTCHA_MARKERS = ("secitptpage/verify", "TCaptcha.js", "wappoc_appmsgcaptcha")
_RATE_LIMIT_PHRASES = ("访问过于频繁", "操作频繁", "too frequent", "too many requests")
_VERIFICATION_PHRASES = ("环境异常", "完成验证后", "verify you are", "environment is abnormal")

# (code, reason, phrases), checked in order: "此内容因违规无法查看" must be a violation, not "unavailable".
_MESSAGE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("CHALLENGE", "rate_limited", _RATE_LIMIT_PHRASES),
    ("CHALLENGE", "verification", _VERIFICATION_PHRASES),
    ("NOT_FOUND", "removed_violation", ("违规", "违反", "violat", "涉嫌", "投诉")),
    ("NOT_FOUND", "deleted", ("删除", "deleted")),
    ("NOT_FOUND", "expired", ("已过期", "过期", "expired")),
    ("NOT_FOUND", "unavailable", ("无法查看", "暂时无法", "unavailable", "cannot be viewed", "不存在")),
)


@dataclass(frozen=True)
class PageVerdict:
    """``ok`` pages are articles; the others carry the item's error code and finer reason."""

    ok: bool
    error_code: str | None = None
    reason: str | None = None


OK = PageVerdict(ok=True)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _message_text(soup: BeautifulSoup) -> str:
    """The sentence of a WeChat message page, if this is one."""
    parts = [_collapse(node.get_text(" ")) for node in soup.select(".weui-msg__title, .weui-msg__desc")]
    parts += [_collapse(node.get_text(" ")) for node in soup.select(".mesg-block, .msg-block")]
    return " ".join(part for part in parts if part)


def has_article_layout(soup: BeautifulSoup, raw: str) -> bool:
    """Whether the page is an article template (normal, picture, text or video post)."""
    if soup.select_one("#js_content, #activity-name, #js_article, .rich_media_content"):
        return True
    return "window.cgiDataNew" in raw or "picture_page_info_list" in raw


def _match_rules(text: str) -> PageVerdict | None:
    lowered = text.lower()
    for code, reason, phrases in _MESSAGE_RULES:
        if any(phrase.lower() in lowered for phrase in phrases):
            return PageVerdict(ok=False, error_code=code, reason=reason)
    return None


def classify_page(soup: BeautifulSoup, raw: str, *, http_status: int = 200) -> PageVerdict:
    """Classify a fetched page (``raw`` is its decoded HTML)."""
    if any(marker in raw for marker in _CAPTCHA_MARKERS) or ("poc_token" in raw and "cgiData" in raw):
        return PageVerdict(ok=False, error_code="CHALLENGE", reason="verification")
    message = _message_text(soup)
    if message:
        verdict = _match_rules(message)
        if verdict is not None:
            return verdict
    if has_article_layout(soup, raw):
        return OK
    if http_status == 404:
        return PageVerdict(ok=False, error_code="NOT_FOUND", reason="http_404")
    # No article layout: the sentence may sit in the <title>, in plain text, or (old pages) in an
    # escaped script string, so the visible text and then the raw page are searched.
    title = soup.title.get_text(" ") if soup.title else ""
    for text in (_collapse(title + " " + soup.get_text(" ")), raw):
        verdict = _match_rules(text)
        if verdict is not None:
            return verdict
    return PageVerdict(ok=False, error_code="NOT_FOUND", reason="unavailable")
