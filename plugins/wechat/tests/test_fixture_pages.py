"""Real saved pages: every labelled page parses to expected.json, every unlabelled one is classified."""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostd_wechat.frontmatter import FIELDS, split_front_matter
from hostd_wechat.markdown import article_markdown
from hostd_wechat.parse import ParsedArticle, parse_article
from wechat_testlib import LABELLED, UNLABELLED, require_fixtures

SRC = Path(__file__).resolve().parents[1] / "src"
URL = "https://mp.weixin.qq.com/s/AbCdEf123"


def _expected() -> dict[str, dict[str, Any]]:
    path = LABELLED / "expected.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


LABELLED_NAMES = sorted(_expected()) or ["(fixtures absent)"]
ARTICLE_NAMES = sorted(name for name, values in _expected().items() if values["page_status"] == "ok") or [
    "(fixtures absent)"
]
UNLABELLED_NAMES = sorted(p.name for p in UNLABELLED.glob("*.html")) if UNLABELLED.is_dir() else ["(absent)"]


def _parse(folder: Path, name: str) -> ParsedArticle:
    require_fixtures()
    return copy.deepcopy(_parsed(folder, name))


@functools.cache
def _parsed(folder: Path, name: str) -> ParsedArticle:
    """Each big page is parsed once per session; tests get their own copy."""
    return parse_article((folder / name).read_bytes(), url=URL)


@pytest.mark.parametrize("name", LABELLED_NAMES)
def test_labelled_page_status_matches(name: str) -> None:
    article = _parse(LABELLED, name)
    expected = _expected()[name]["page_status"]
    got = "ok" if article.verdict.ok else article.verdict.reason
    assert got == expected


@pytest.mark.smoke
@pytest.mark.parametrize("name", ARTICLE_NAMES)
def test_labelled_article_values_equal_expected(name: str) -> None:
    article = _parse(LABELLED, name)
    expected = _expected()[name]
    images = expected.get("images", expected.get("images_in_js_content"))
    assert {
        "title": article.title,
        "account_name": article.account_name,
        "author": article.author or None,
        "publish_iso": article.publish_time,
        "images": article.images,
        "body_first80": article.body_text[:80],
    } == {
        "title": expected["title"],
        "account_name": expected["account_name"],
        "author": expected["author"],
        "publish_iso": expected["publish_iso"],
        "images": images,
        "body_first80": expected["body_first80"],
    }
    assert article.publish_time_raw is not None


@pytest.mark.parametrize("name", LABELLED_NAMES)
def test_challenge_and_missing_pages_get_their_codes(name: str) -> None:
    article = _parse(LABELLED, name)
    status = _expected()[name]["page_status"]
    codes = {
        "rate_limited": "CHALLENGE",
        "verification": "CHALLENGE",
        "deleted": "NOT_FOUND",
        "expired": "NOT_FOUND",
        "unavailable": "NOT_FOUND",
        "removed_violation": "NOT_FOUND",
    }
    if status == "ok":
        assert article.verdict.error_code is None
    else:
        assert article.verdict.error_code == codes[status]


@pytest.mark.parametrize("name", UNLABELLED_NAMES)
def test_unlabelled_page_is_classified_and_ok_ones_get_complete_front_matter(name: str) -> None:
    article = _parse(UNLABELLED, name)
    if not article.verdict.ok:
        assert article.verdict.error_code in {"NOT_FOUND", "CHALLENGE"}
        assert article.verdict.reason in {
            "deleted",
            "removed_violation",
            "expired",
            "unavailable",
            "rate_limited",
            "verification",
        }
        return
    text = article_markdown(article, source_url=URL, retrieved_at="2026-01-01T00:00:00+08:00")
    metadata, body, form = split_front_matter(text)
    assert form == "yaml"
    assert list(metadata)[: len(FIELDS)] == list(FIELDS)
    for key in ("title", "account_name", "publish_time", "canonical_url", "source_url", "article_id"):
        assert metadata[key], key
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00", metadata["publish_time"])
    assert metadata["word_count"] > 0
    assert body.strip()


def test_deleted_pages_in_both_languages_and_violation_are_told_apart() -> None:
    assert _parse(UNLABELLED, "deleted_by_publisher_en.html").verdict.reason == "deleted"
    assert _parse(UNLABELLED, "removed_violation_zh.html").verdict.reason == "removed_violation"


def test_normal_articles_are_not_called_deleted_though_their_scripts_say_so() -> None:
    require_fixtures()
    for page in sorted(LABELLED.glob("article_202[4-6]*.html")):
        raw = page.read_text(encoding="utf-8")
        assert "违规" in raw or "已删除" in raw  # the trap is really there
        assert _parse(LABELLED, page.name).verdict.ok, page.name


def test_markdown_keeps_code_lists_quotes_links_and_images() -> None:
    article = _parse(LABELLED, "article_2024_reprint_codeblocks_vue2react.html")
    text = article_markdown(article, source_url=URL, retrieved_at="x")
    assert text.count("```") >= 2 * 60  # 63 <pre> blocks, each fenced
    assert "\n> " in text
    assert "\n# " in text
    assert "\n## " in text
    assert "\n### " in text
    assert text.count("![](https://mmbiz.qpic.cn/") == article.images == 20
    assert "<script" not in text
    assert "function(" not in text.replace("function App", "")
    legacy = article_markdown(
        _parse(LABELLED, "article_2017_legacy_code_lists.html"), source_url=URL, retrieved_at="x"
    )
    assert re.search(r"^- ", legacy, re.MULTILINE)
    assert "](http" in legacy


def test_picture_post_images_become_markdown_image_links() -> None:
    article = _parse(LABELLED, "picture_post_2025_36kr.html")
    text = article_markdown(article, source_url=URL, retrieved_at="x")
    assert len(re.findall(r"!\[\]\(https://mmbiz\.qpic\.cn/[^)]+\)", text)) == 4
    assert "&amp;" not in text.split("---")[2]


def test_front_matter_keeps_the_raw_time_and_counts_words() -> None:
    article = _parse(LABELLED, "article_2025_tech_code_xuanyuan.html")
    metadata, _, _ = split_front_matter(article_markdown(article, source_url=URL, retrieved_at="x"))
    assert metadata["publish_time"] == "2025-11-10T12:00:10+08:00"
    assert metadata["publish_time_raw"] == "1762747210"
    assert metadata["canonical_url"] == "https://mp.weixin.qq.com/s/KDWh_qGpFN5Vu1TR9t30Mw"
    assert metadata["article_id"] == "AbCdEf123"
    assert metadata["images"] == 10
    assert metadata["word_count"] > 1000


def test_source_holds_no_fixture_file_name_or_title() -> None:
    require_fixtures()
    needles = set()
    for folder in (LABELLED, UNLABELLED):
        for page in folder.glob("*.html"):
            needles.add(page.name)
            needles.add(page.stem)
    for value in _expected().values():
        for key in ("title", "body_first80", "article_url", "target_url"):
            if value.get(key):
                needles.add(value[key])
    sources = {path: path.read_text(encoding="utf-8") for path in SRC.rglob("*.py")}
    assert sources
    for needle in needles:
        for path, text in sources.items():
            assert needle not in text, f"{needle!r} appears in {path}"


def test_yaml_front_matter_is_valid_yaml_even_for_hostile_titles() -> None:
    article = _parse(LABELLED, "article_2025_reprint_36kr.html")
    article.title = 'A: "quoted" --- # not a comment\n: [x] {y}'
    text = article_markdown(article, source_url=URL, retrieved_at="x")
    block = text.split("---\n")[1]
    assert yaml.safe_load(block)["title"] == article.title
