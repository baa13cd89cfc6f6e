"""An article as the Markdown file the reader gets: front matter, title heading, body.

The body (cleaned HTML) goes through markdownify.

WeChat's editors write code blocks as ``<pre>`` holding one ``<code>`` per line or lines split
by ``<br>``, with the language in ``data-lang`` or a class; those are normalised first so the
fenced block keeps its lines and its language. If conversion fails the body's plain text is
used instead, so an odd page still gives a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hostd_wechat.frontmatter import FIELDS, render_front_matter, word_count

if TYPE_CHECKING:
    from bs4 import Tag

    from hostd_wechat.parse import ParsedArticle

_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|code-snippet_|code-snippet__|hljs)-?_?([A-Za-z0-9+#.-]+)$")
_IGNORED_LANGUAGE_WORDS = frozenset({"fix", "code", "snippet", "line", "index", "hljs", "js_darkmode"})
_EXTRA_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_TRAILING_SPACES = re.compile(r"[ \t]+\n")
_SOURCE_WHITESPACE = re.compile(r"[ \t\r\n]*\n[ \t\r\n]*")
_EMPTY_HEADING = re.compile(r"^#{1,6}[ \t]*$", re.MULTILINE)


def code_language(pre: Tag) -> str:
    """The language a code block declares (``data-lang``, ``language-x`` / ``code-snippet__x`` classes)."""
    candidates = [pre, *pre.find_all("code", limit=1)]
    for node in candidates:
        declared = node.get("data-lang")
        if isinstance(declared, str) and re.fullmatch(r"[A-Za-z0-9+#.-]{1,30}", declared.strip()):
            return declared.strip().lower()
        for css_class in node.get("class") or []:
            match = _LANGUAGE_CLASS.match(css_class)
            if match and match.group(1).lower() not in _IGNORED_LANGUAGE_WORDS:
                return match.group(1).lower()
    return ""


def _normalise_code_blocks(body: Tag) -> None:
    from bs4 import NavigableString

    for pre in body.find_all("pre"):
        for counter in pre.select("ul.code-snippet__line-index"):
            counter.decompose()
        for line_break in pre.find_all("br"):
            line_break.replace_with(NavigableString("\n"))
        lines = pre.find_all("code")
        if len(lines) > 1:
            for line in lines[:-1]:
                text = line.get_text()
                if not text.endswith("\n"):
                    line.append(NavigableString("\n"))


def _collapse_source_whitespace(body: Tag) -> None:
    """Source line breaks between inline elements are not paragraph breaks (markdownify keeps them)."""
    from bs4 import NavigableString

    for text in list(body.find_all(string=True)):
        if type(text) is not NavigableString or "\n" not in text or text.find_parent("pre") is not None:
            continue
        text.replace_with(NavigableString(_SOURCE_WHITESPACE.sub(" ", str(text))))


def _converter() -> Any:
    from markdownify import ATX, MarkdownConverter

    class ArticleConverter(MarkdownConverter):
        """markdownify with ATX headings, fenced code keeping its language, no empty links."""

        def convert_a(self, el: Any, text: str, parent_tags: Any) -> str:
            href = el.get("href")
            if (
                not isinstance(href, str)
                or not href.strip()
                or href.strip().lower().startswith("javascript:")
            ):
                return text
            return str(MarkdownConverter.convert_a(self, el, text, parent_tags))  # type: ignore[attr-defined]

    return ArticleConverter(
        heading_style=ATX, code_language_callback=code_language, bullets="-", escape_misc=False
    )


def tidy(markdown: str) -> str:
    """No trailing spaces, at most one blank line in a row, one final newline."""
    markdown = _TRAILING_SPACES.sub("\n", markdown.replace("\u00a0", " ").replace("\r\n", "\n"))
    markdown = _EMPTY_HEADING.sub("", markdown)
    return _EXTRA_BLANK_LINES.sub("\n\n", markdown).strip() + "\n"


def _relink_images(body: Tag, image_links: Mapping[str, str]) -> None:
    """Point each image whose ``src`` was stored locally at its relative path."""
    for image in body.find_all("img"):
        source = image.get("src")
        if isinstance(source, str) and source in image_links:
            image["src"] = image_links[source]


def html_to_markdown(body_html: str, image_links: Mapping[str, str] | None = None) -> str:
    """The Markdown of ``body_html`` (its plain text when markdownify cannot convert it).

    ``image_links`` maps image sources to the relative paths that replace them.
    """
    from hostd_wechat.parse import make_soup

    soup = make_soup(f"<div id='hostd-body'>{body_html}</div>")
    body = soup.find("div", id="hostd-body")
    if body is None:
        return ""
    if image_links:
        _relink_images(body, image_links)
    try:
        _normalise_code_blocks(body)
        _collapse_source_whitespace(body)
        return tidy(_converter().convert_soup(body))
    except Exception:  # markdownify meeting a page it cannot handle: keep the words at least
        text = body.get_text("\n")
        return tidy("\n".join(line.strip() for line in text.splitlines()))


def article_markdown(
    article: ParsedArticle,
    *,
    source_url: str,
    retrieved_at: str,
    image_links: dict[str, str] | None = None,
) -> str:
    """The whole file: front matter, a blank line, the title heading and the body.

    ``image_links`` (remote image link -> relative path) points stored images at their files.
    """
    body = html_to_markdown(article.body_html, image_links) if article.body_html else ""
    metadata: dict[str, Any] = {
        "title": article.title,
        "account_name": article.account_name,
        "author": article.author,
        "publish_time": article.publish_time or "",
        "canonical_url": article.canonical_url,
        "source_url": source_url,
        "retrieved_at": retrieved_at,
        "article_id": article.article_id,
        "word_count": word_count(article.body_text),
        "images": article.images,
    }
    assert tuple(metadata) == FIELDS
    if article.publish_time_raw and article.publish_time_raw != article.publish_time:
        metadata["publish_time_raw"] = article.publish_time_raw
    heading = f"# {article.title}\n\n" if article.title else ""
    return render_front_matter(metadata) + heading + body
