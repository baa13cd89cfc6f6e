"""Extracting an article's metadata and body from a saved or fetched WeChat page.

Where each value lives (see the fixtures' README for what real pages contain):

- title: ``#activity-name`` (its ``.js_title_inner`` when a paid badge sits beside it),
  ``og:title``, then the page data (``msg_title``, ``cgiData.title``);
- account: ``#js_name``, then the page data's ``nick_name`` / ``nickname``;
- author: ``meta[name=author]``, ``#js_author_name``, the byline span, the page data;
- publish time: the time variables (``ct``, ``create_time``, ``oriCreateTime``,
  ``cgiDataNew``), then ``article:published_time``; ``#publish_time`` is filled by scripts and
  empty in the HTML;
- body: ``#js_content``; picture (8) and text (10) posts keep theirs in the page data.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from hostd_wechat.classify import PageVerdict, classify_page
from hostd_wechat.page_data import PageData, decode_js_string, document_write_text, read_page_data

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

CHINA_TIME = dt.timezone(dt.timedelta(hours=8))
#: item_show_type values whose body lives in the page data rather than in #js_content.
PAGE_DATA_BODY_TYPES = frozenset({"8", "10"})

# Elements that are never part of the article: profile cards, follow prompts, ad slots, QR codes.
NOISE_SELECTORS = (
    "script, style, noscript, template, iframe, mp-common-profile, .mp_profile_iframe_wrp, "
    "#js_top_profile, .profile_area_hide, .wx_follow_context, .js_ad_link, .mpda_bottom_container, "
    "#js_pc_qr_code, .qr_code_pc, .reward_area, mp-ad, .js_product_container, "
    ".js_uneditable.custom_select_card"
)

_WHITESPACE = re.compile(r"[\s\u00a0\u3000\u200b\ufeff]+")
_UNIX_TIME = re.compile(r"^\d{9,11}$")
_DATE_TIME = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$")


def collapse(text: str) -> str:
    """Whitespace (NBSP, ideographic space, zero-width space included) collapsed to one space."""
    return _WHITESPACE.sub(" ", text).strip()


def text_content(node: Tag) -> str:
    """The node's text as the DOM's ``textContent`` gives it, whitespace collapsed.

    Separating every string with a space would split WeChat's per-run ``<span leaf>`` wrappers.
    """
    return collapse(node.get_text(""))


@dataclass
class ParsedArticle:
    """What one page yields; ``verdict`` says whether it is an article at all."""

    verdict: PageVerdict
    title: str = ""
    account_name: str = ""
    author: str = ""
    publish_time: str | None = None
    publish_time_raw: str | None = None
    canonical_url: str = ""
    article_id: str = ""
    item_show_type: str = ""
    body_html: str = ""
    body_text: str = ""
    image_urls: list[str] = field(default_factory=list)

    @property
    def images(self) -> int:
        return len(self.image_urls)

    @property
    def needs_scripts(self) -> bool:
        """An article template whose title and body are both empty until its scripts run."""
        return self.verdict.ok and not self.title and not self.body_text and not self.image_urls


def make_soup(html: str | bytes) -> BeautifulSoup:
    """Parse with lxml when it is installed (fast), else Python's own parser."""
    from bs4 import BeautifulSoup

    try:
        return BeautifulSoup(html, "lxml")
    except Exception:  # bs4.FeatureNotFound when lxml is missing
        return BeautifulSoup(html, "html.parser")


def _meta(soup: BeautifulSoup, **attrs: str) -> str:
    node = soup.find("meta", attrs=dict(attrs))
    content = node.get("content") if node is not None else None
    return collapse(content) if isinstance(content, str) else ""


def _text(soup: BeautifulSoup | Tag, selector: str) -> str:
    node = soup.select_one(selector)
    return collapse(node.get_text(" ")) if node is not None else ""


def _title(soup: BeautifulSoup, data: PageData) -> str:
    inner = _text(soup, "#activity-name .js_title_inner")
    if inner:
        return inner
    heading = soup.select_one("#activity-name")
    if heading is not None:
        for badge in heading.select(".pay__tag, .rich_media_title_paid_tag, [class*='pay_tag']"):
            badge.decompose()
        text = collapse(heading.get_text(" "))
        if text:
            return text
    candidates = (
        _raw_meta(soup, property="og:title"),
        _raw_meta(soup, name="twitter:title"),
        data.first("msg_title", "title"),
        data.cgi.get("title", ""),
        _text(soup, "#js_text_title"),
        soup.title.get_text(" ") if soup.title else "",
    )
    for candidate in candidates:
        line = _first_line(candidate)
        if line:
            return line
    return ""


def _raw_meta(soup: BeautifulSoup, **attrs: str) -> str:
    node = soup.find("meta", attrs=dict(attrs))
    content = node.get("content") if node is not None else None
    return content if isinstance(content, str) else ""


def _first_line(value: str) -> str:
    """A title is one line: text posts put their whole text, JS-escaped, in og:title."""
    if "\\" in value:
        value = decode_js_string(value)
    for line in value.splitlines():
        if line.strip():
            return collapse(line)
    return ""


def _account(soup: BeautifulSoup, data: PageData) -> str:
    return (
        _text(soup, "#js_name")
        or collapse(data.cgi.get("nick_name", ""))
        or collapse(data.first("nick_name", "nickname"))
        or _text(soup, ".account_nickname_inner, .wx_follow_nickname")
    )


def _byline(soup: BeautifulSoup) -> str:
    for node in soup.select(".rich_media_meta_list span.rich_media_meta_text"):
        if node.get("id"):
            continue
        text = collapse(node.get_text(" "))
        if text:
            return text
    return ""


def _author(soup: BeautifulSoup, data: PageData) -> str:
    return (
        _meta(soup, name="author")
        or _text(soup, "#js_author_name")
        or _byline(soup)
        or collapse(data.cgi.get("author", ""))
        or collapse(data.first("author"))
    )


def to_china_iso(raw: str) -> str | None:
    """A unix time or a ``YYYY-MM-DD[ HH:MM[:SS]]`` value as ISO-8601 in +08:00."""
    value = raw.strip()
    if _UNIX_TIME.match(value):
        return dt.datetime.fromtimestamp(int(value), tz=CHINA_TIME).isoformat()
    match = _DATE_TIME.match(value)
    if match:
        year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
        try:
            return dt.datetime(year, month, day, hour, minute, second, tzinfo=CHINA_TIME).isoformat()
        except ValueError:
            return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=CHINA_TIME)
    return parsed.astimezone(CHINA_TIME).isoformat()


def _publish_time(soup: BeautifulSoup, data: PageData) -> tuple[str | None, str | None]:
    candidates = [
        data.first("ct"),
        data.first("create_time"),
        data.first("oriCreateTime"),
        data.cgi.get("ori_create_time", ""),
        data.cgi.get("create_time", ""),
        data.first("ori_create_time"),
        data.first("publish_time"),
        _meta(soup, property="article:published_time"),
    ]
    # Unix times first (exact to the second), then date strings.
    ordered = [c for c in candidates if _UNIX_TIME.match(c.strip())] + [c for c in candidates if c.strip()]
    for raw in ordered:
        iso = to_china_iso(raw)
        if iso:
            return iso, raw.strip()
    return None, None


def article_id_from_url(url: str) -> str:
    """``/s/<id>`` gives ``<id>``; ``/s?__biz=..&mid=..&idx=..&sn=..`` gives ``sn`` (else mid_idx)."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) >= 2 and segments[-2] == "s":
        return segments[-1]
    query = parse_qs(parts.query.replace("&amp;", "&"))
    for key in ("sn", "signature"):
        if query.get(key):
            return query[key][0]
    if query.get("mid"):
        return "_".join([query["mid"][0], *(query.get("idx") or [])])
    return segments[-1] if segments else ""


def _canonical_url(soup: BeautifulSoup, data: PageData) -> str:
    link = soup.find("link", rel="canonical")
    href = link.get("href") if link is not None else None
    candidates = [
        href if isinstance(href, str) else "",
        _meta(soup, property="og:url"),
        data.first("msg_link"),
        data.cgi.get("link", ""),
    ]
    for candidate in candidates:
        candidate = candidate.strip().replace("&amp;", "&")
        if candidate.startswith(("http://", "https://")):
            return candidate
    return ""


def _image_url(node: Tag) -> str:
    for attribute in ("data-src", "src", "data-original"):
        value = node.get(attribute)
        if isinstance(value, str) and value.strip() and not value.startswith("data:"):
            return value.strip()
    return ""


def clean_body(container: Tag) -> Tag:
    """Remove what is not the article, inline ``document.write`` text, point images at real URLs.

    Mutates ``container`` (a detached copy of the page's node).
    """
    from bs4 import NavigableString

    for script in container.find_all("script"):
        written = document_write_text(script.string or "")
        if written:
            script.replace_with(NavigableString(written))
    for node in container.select(NOISE_SELECTORS):
        node.decompose()
    for image in container.find_all("img"):
        url = _image_url(image)
        if url:
            image["src"] = url
    return container


def _page_data_body(data: PageData) -> str:
    """The body HTML of picture and text posts, kept in ``cgiDataNew.content_noencode``."""
    import html

    content = data.cgi.get("content_noencode", "").strip()
    if not content:
        return ""
    if "<" in content and ">" in content:
        return content
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n|\n", content) if p.strip()]
    return "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


def parse_article(html: str | bytes, *, url: str = "", http_status: int = 200) -> ParsedArticle:
    """Classify the page and, for articles, extract metadata and body."""
    soup = make_soup(html)
    raw = html if isinstance(html, str) else html.decode("utf-8", errors="replace")
    verdict = classify_page(soup, raw, http_status=http_status)
    if not verdict.ok:
        return ParsedArticle(verdict=verdict, article_id=article_id_from_url(url))
    scripts = [node.string or "" for node in soup.find_all("script") if node.string]
    data = read_page_data(scripts)
    article = ParsedArticle(verdict=verdict, item_show_type=data.item_show_type)
    article.title = _title(soup, data)
    article.account_name = _account(soup, data)
    article.author = _author(soup, data)
    article.publish_time, article.publish_time_raw = _publish_time(soup, data)
    article.canonical_url = _canonical_url(soup, data)
    article.article_id = article_id_from_url(url) or article_id_from_url(article.canonical_url)
    _fill_body(article, soup, data)
    return article


def _fill_body(article: ParsedArticle, soup: BeautifulSoup, data: PageData) -> None:
    container = soup.select_one("#js_content") or soup.select_one(".rich_media_content")
    if article.item_show_type in PAGE_DATA_BODY_TYPES or container is None:
        body_html = _page_data_body(data)
        if body_html or data.picture_urls or container is None:
            images = "".join(f'<p><img src="{_attr(u)}" alt=""/></p>' for u in data.picture_urls)
            body = make_soup(f"<div>{body_html}{images}</div>").div
            if body is not None:
                clean_body(body)
                article.body_html = body.decode_contents()
                article.body_text = text_content(body)
            article.image_urls = list(data.picture_urls)
            return
    if container is None:
        return
    clean_body(container)
    article.image_urls = [url for url in (_image_url(img) for img in container.find_all("img")) if url]
    article.body_html = container.decode_contents()
    article.body_text = text_content(container)


def _attr(value: str) -> str:
    import html

    return html.escape(value, quote=True)
