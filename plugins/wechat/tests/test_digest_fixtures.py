"""Digests of the saved real pages: the summaries hold the articles' prose, never their chrome.

Each saved page is converted with the plugin's own parser and Markdown writer (as
``read_wechat_articles`` would save it), then the folder is digested by ``summarize_articles``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from hostd_testing import call
from hostd_wechat.extractive import markdown_text
from hostd_wechat.markdown import article_markdown
from hostd_wechat.parse import parse_article
from wechat_testlib import LABELLED, UNLABELLED, require_fixtures, wechat_client

pytestmark = pytest.mark.anyio

URL = "https://mp.weixin.qq.com/s/AbCdEf123"
CHROME = ("展开", "阅读原文", "往期推荐", "往年回顾", "References", "推荐阅读")


@functools.cache
def _saved_markdown() -> dict[str, str]:
    """File stem -> the Markdown file read_wechat_articles writes for that page (articles only)."""
    saved = {}
    for folder in (LABELLED, UNLABELLED):
        for page in sorted(folder.glob("*.html")):
            article = parse_article(page.read_bytes(), url=URL)
            if article.verdict.ok:
                saved[page.stem] = article_markdown(
                    article, source_url=URL, retrieved_at="2026-01-01T00:00:00"
                )
    return saved


async def _digest(hostd_data_dir: Path, hostd_roots: Path, style: str) -> dict[str, str]:
    """Summary text per saved page, for one style."""
    require_fixtures()
    folder = hostd_roots / "articles"
    folder.mkdir(exist_ok=True)
    for stem, text in _saved_markdown().items():
        (folder / f"{stem}.md").write_text(text, encoding="utf-8")
    async with wechat_client(hostd_data_dir, hostd_roots, language="zh") as client:
        envelope = await call(
            client,
            "summarize_articles",
            input_dir="articles",
            style=style,
            language="zh",
            output_path=f"{style}.md",
            include_metadata=True,
            include_toc=False,
        )
    assert envelope["status"] == "success", envelope
    document = (hostd_roots / f"{style}.md").read_text(encoding="utf-8")
    sections = {}
    for block in re.split(r"^## \d+\. ", document, flags=re.MULTILINE)[1:]:
        source = re.search(r"^- 来源: .*\((.+)\.md\)$", block, re.MULTILINE)
        assert source is not None, block[:200]
        summary = block.split("\n\n", 2)[2].split("\n## ")[0].strip()
        sections[source.group(1)] = summary
    return sections


def _lines(summary: str) -> list[str]:
    return [line.removeprefix("- ") for line in summary.splitlines() if line.strip()]


@pytest.mark.parametrize("style", ["key_points", "brief", "outline", "narrative"])
async def test_no_summary_holds_urls_link_lists_or_page_chrome(
    hostd_data_dir: Path, hostd_roots: Path, style: str
) -> None:
    sections = await _digest(hostd_data_dir, hostd_roots, style)
    assert len(sections) == len(_saved_markdown())
    for stem, summary in sections.items():
        assert not re.search(r"(https?|mailto)://|mailto:", summary), (stem, summary)
        assert not re.search(r"\[\d{1,3}\]", summary), (stem, summary)  # footnote markers
        for line in _lines(summary):
            assert line.strip("*: ") not in CHROME, (stem, line)
        for word in CHROME:
            assert f"**{word}**" not in summary, (stem, summary)


async def test_the_weekly_gets_its_prose_not_its_footnotes(hostd_data_dir: Path, hostd_roots: Path) -> None:
    key_points = (await _digest(hostd_data_dir, hostd_roots, "key_points"))[
        "article_2025_long_weekly_ruanyifeng"
    ]
    points = _lines(key_points)
    assert 2 <= len(points) <= 5
    for point in points:
        assert "github.com" not in point
        assert not point.startswith("[")
        assert len(point) >= 15, point
        assert re.search(r"[\u4e00-\u9fff]{6}", point), point
    outline = (await _digest(hostd_data_dir, hostd_roots, "outline"))["article_2025_long_weekly_ruanyifeng"]
    assert "- **软件界面如何设计**: " in outline
    assert "- **言论**: " in outline
    assert "References" not in outline
    assert "往年回顾" not in outline
    assert "NPC 演员" not in outline


async def test_a_video_post_is_not_summarized_as_its_expand_button(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    brief = (await _digest(hostd_data_dir, hostd_roots, "brief"))["video_post_2019_legacy"]
    assert "展开" not in brief
    assert brief == "_未知_"


async def test_the_outline_leaves_out_the_further_reading_block(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    outline = (await _digest(hostd_data_dir, hostd_roots, "outline"))["article_2025_tech_code_xuanyuan"]
    assert "- **尝试定位**: " in outline
    assert "- **寻找Bug**: " in outline
    assert "往期推荐" not in outline
    assert "VMProtect" not in outline
    assert "Wireshark" not in outline


async def test_key_points_are_whole_sentences_and_never_repeat(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    sections = await _digest(hostd_data_dir, hostd_roots, "key_points")
    for stem, summary in sections.items():
        points = _lines(summary)
        assert len(points) == len(set(points)), (stem, points)
    # A page of bank tables: list entries such as "1、工行高管团队及其他重要人员" are labels, not points.
    bank = _lines(sections["article_2020_qingjinrong"])
    assert bank, bank
    assert not any(re.fullmatch(r"\d、.{2,20}", point) for point in bank), bank
    assert any("谷澍" in point for point in bank)


def test_link_lists_chrome_and_reference_blocks_are_not_prose() -> None:
    body = "\n".join(
        [
            "The article's first real sentence is here.",
            "展开",
            "- [Another article](https://mp.weixin.qq.com/s/x)",
            "`[1]` 开源:*https://github.com/ruanyf/weekly*",
            "https://example.com/a/b",
            "We used [the parser](https://example.com) to read a long page of text.",
            "**往期推荐**",
            "Nothing after a further-reading line is prose.",
            "## Next part",
            "Prose again after the next heading.",
            "### References",
            "[2] Some reference: https://example.com",
        ]
    )
    headings, prose = markdown_text(body)
    assert [h[1] for h in headings] == ["Next part"]
    assert [line for line in prose.splitlines() if not line.startswith("\x00")] == [
        "The article's first real sentence is here.",
        "We used the parser to read a long page of text.",
        "Prose again after the next heading.",
    ]
