"""summarize_articles: styles, labels, front matter forms, extractive quality, sampling, errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hostd_testing import call, prompt_text
from hostd_wechat.extractive import split_sentences
from wechat_testlib import wechat_client

pytestmark = pytest.mark.anyio

ENGLISH_ARTICLE = """---
title: Solar Storage Grows
account_name: Energy Weekly
author: Ann
publish_time: '2025-03-01T08:00:00+08:00'
source_url: https://mp.weixin.qq.com/s/solar
word_count: 120
---

# Solar Storage Grows

## Market

Utilities added record battery capacity last year. Prices for lithium cells fell again.
Battery storage now smooths solar output in the evening peak for most grid operators.

## Outlook

Analysts expect battery storage for solar farms to double by 2027. Policy support remains uncertain.
"""


def _write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


async def _summarize(
    data_dir: Path,
    root: Path,
    arguments: dict[str, Any],
    *,
    settings: dict[str, Any] | None = None,
    language: str = "en",
    **client_options: Any,
) -> dict[str, Any]:
    async with wechat_client(
        data_dir, root, settings=settings, language=language, **client_options
    ) as client:
        return await call(client, "summarize_articles", **arguments)


@pytest.mark.smoke
async def test_outline_in_english_over_every_markdown_file(hostd_data_dir: Path, hostd_roots: Path) -> None:
    _write(hostd_roots, "in/a.md", ENGLISH_ARTICLE)
    _write(hostd_roots, "in/deep/b.md", ENGLISH_ARTICLE.replace("Solar Storage Grows", "Wind Power Slows"))
    _write(hostd_roots, "in/notes.txt", "not markdown")
    envelope = await _summarize(
        hostd_data_dir,
        hostd_roots,
        {
            "input_dir": "in",
            "style": "outline",
            "language": "en",
            "output_path": "out/digest.md",
            "response_format": "detailed",
        },
    )
    assert envelope["status"] == "success"
    assert envelope["article_count"] == 2
    assert envelope["summarizer"] == "extractive"
    assert envelope["saved"] is True
    text = (hostd_roots / "out" / "digest.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) == envelope["bytes_written"]
    assert "- Source: <https://mp.weixin.qq.com/s/solar>" in text
    assert "- Account: Energy Weekly" in text
    assert "- Published: 2025-03-01T08:00:00+08:00" in text
    assert "## Metadata manifest" in text
    assert "- **Market**: " in text
    assert "- **Outlook**: " in text
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    for link_text, anchor in re.findall(r"^- \[(.+?)\]\(#(.+?)\)$", text, re.MULTILINE):
        assert link_text in headings
        assert anchor == _github_slug(link_text)
    assert [s["anchor"] for s in envelope["sections_overview"]] == [
        "1-solar-storage-grows",
        "2-wind-power-slows",
    ]


def _github_slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


async def test_front_matter_missing_or_not_yaml_is_still_summarized(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    _write(
        hostd_roots,
        "in/plain.md",
        "# Only a heading\n\nNo front matter at all here. A second sentence follows.\n",
    )
    _write(
        hostd_roots,
        "in/lines.md",
        "title: Lines Title\naccount_name: Lines Account\nsource_url: https://mp.weixin.qq.com/s/lines\n\n"
        "Body of the lines article. It has two sentences.\n",
    )
    _write(
        hostd_roots,
        "in/broken.md",
        "---\ntitle: [unclosed\naccount_name: Broken Account\n---\n\nThe body survives broken YAML.\n",
    )
    envelope = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "d.md", "language": "en"}
    )
    assert envelope["article_count"] == 3
    assert envelope["errors"] == []
    text = (hostd_roots / "d.md").read_text(encoding="utf-8")
    assert "Only a heading" in text
    assert "- Account: Unknown" in text
    assert "- Published: Unknown" in text
    assert "Lines Title" in text
    assert "Lines Account" in text
    assert "<https://mp.weixin.qq.com/s/lines>" in text
    assert "Broken Account" in text
    assert "The body survives broken YAML." in text


async def test_chinese_labels_follow_the_language_and_auto_detects_chinese(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    _write(
        hostd_roots,
        "in/zh.md",
        "---\ntitle: 中文标题\naccount_name: 某公众号\n---\n\n这是第一句话。这是第二句话！最后一句？\n",
    )
    envelope = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "zh.md"}, language="en"
    )
    text = (hostd_roots / "zh.md").read_text(encoding="utf-8")
    assert "- 来源：" in text or "- 来源:" in text
    assert "- 账号: 某公众号" in text
    assert "- 发布时间: 未知" in text
    assert "## 元数据清单" in text
    assert envelope["article_count"] == 1


async def test_key_points_find_the_key_sentence_that_is_not_first(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    filler = [
        "The morning started with coffee and a short walk.",
        "Later the team met to talk about the weather.",
        "Quantum error correction with surface codes reached a logical qubit lifetime beyond the physical "
        "qubits, and the surface codes scaled as the quantum error correction theory predicted.",
        "Lunch was served at noon.",
        "Everyone went home early.",
        "The cafeteria menu changed on Friday.",
        "Some people prefer tea.",
    ]
    article = (
        "# Lab notes\n\n"
        + " ".join(filler)
        + ("\n\nQuantum error correction matters because surface codes protect quantum information.\n")
    )
    _write(hostd_roots, "in/lab.md", article)
    _write(
        hostd_roots, "in/other.md", "# Other\n\nThe weather was mild. People talked about lunch and tea.\n"
    )
    await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "k.md", "style": "key_points"}
    )
    text = (hostd_roots / "k.md").read_text(encoding="utf-8")
    section = text.split("## 1. Lab notes")[1].split("## 2.")[0]
    assert "- Quantum error correction with surface codes reached" in section
    # The best sentence outranks the opening one: a one-line summary picks it, not the first sentence.
    await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "b.md", "style": "brief"}
    )
    brief = (hostd_roots / "b.md").read_text(encoding="utf-8").split("## 1. Lab notes")[1].split("## 2.")[0]
    assert "Quantum error correction with surface codes reached" in brief
    assert "coffee" not in brief


async def test_brief_and_narrative_styles_and_truncation(hostd_data_dir: Path, hostd_roots: Path) -> None:
    _write(hostd_roots, "in/a.md", ENGLISH_ARTICLE)
    brief = await _summarize(
        hostd_data_dir,
        hostd_roots,
        {"input_dir": "in", "output_path": "b.md", "style": "brief", "language": "en"},
    )
    assert brief["status"] == "success"
    section = (hostd_roots / "b.md").read_text(encoding="utf-8").split("## 1. Solar Storage Grows")[1]
    summary = section.split("\n\n")[2]
    assert 1 <= len(split_sentences(summary)) <= 2
    await _summarize(
        hostd_data_dir,
        hostd_roots,
        {
            "input_dir": "in",
            "output_path": "n.md",
            "style": "narrative",
            "per_article_max_chars": 40,
            "language": "en",
        },
    )
    narrative = (hostd_roots / "n.md").read_text(encoding="utf-8").split("## 1. Solar Storage Grows")[1]
    assert " (truncated)" in narrative


async def test_sampling_lets_the_clients_model_write_the_summaries(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    _write(hostd_roots, "in/a.md", ENGLISH_ARTICLE)
    _write(hostd_roots, "in/b.md", ENGLISH_ARTICLE.replace("Solar Storage Grows", "Second"))
    prompts: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = prompt_text(params)
        prompts.append(prompt)
        return types.CreateMessageResult(
            role="assistant",
            model="test-model",
            content=types.TextContent(type="text", text="=== 1 ===\nMODEL ONE\n=== 2 ===\nMODEL TWO"),
        )

    envelope = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "s.md"}, sampling_callback=sampling
    )
    assert envelope["summarizer"] == "sampling"
    assert envelope["warnings"] == []
    assert len(prompts) == 1
    assert "Solar Storage Grows" in prompts[0]
    assert "Second" in prompts[0]
    text = (hostd_roots / "s.md").read_text(encoding="utf-8")
    assert "MODEL ONE" in text
    assert "MODEL TWO" in text


async def test_refused_sampling_falls_back_with_a_warning(hostd_data_dir: Path, hostd_roots: Path) -> None:
    _write(hostd_roots, "in/a.md", ENGLISH_ARTICLE)

    async def refuse(context: Any, params: types.CreateMessageRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-1, message="user declined")

    envelope = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "f.md"}, sampling_callback=refuse
    )
    assert envelope["summarizer"] == "extractive"
    assert envelope["warnings"]
    assert "extractive" in envelope["warnings"][0]
    never = await _summarize(
        hostd_data_dir,
        hostd_roots,
        {"input_dir": "in", "output_path": "g.md"},
        settings={"wechat": {"use_sampling": "never"}},
        sampling_callback=refuse,
    )
    assert never["summarizer"] == "extractive"
    assert never["warnings"] == []


async def test_empty_input_read_errors_and_too_long(hostd_data_dir: Path, hostd_roots: Path) -> None:
    (hostd_roots / "empty").mkdir()
    empty = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "empty"})
    assert empty["status"] == "error"
    assert empty["error"]["code"] == "EMPTY_INPUT"
    _write(hostd_roots, "in/good.md", ENGLISH_ARTICLE)
    _write(hostd_roots, "in/bad.md", b"\xff\xfe\x00garbage\x80")
    mixed = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "m.md"})
    assert mixed["status"] == "success"
    assert mixed["article_count"] == 1
    assert [e["code"] for e in mixed["errors"]] == ["READ_ERROR"]
    assert mixed["warnings"]
    for copy in range(3):
        _write(hostd_roots, f"in/copy{copy}.md", ENGLISH_ARTICLE)
    too_long = await _summarize(
        hostd_data_dir,
        hostd_roots,
        {"input_dir": "in", "output_path": "t.md"},
        settings={"wechat": {"summary_max_output_chars": 1000}},
    )
    assert too_long["error"]["code"] == "TOO_LONG"
    assert "brief" in too_long["error"]["hint"]
    assert not (hostd_roots / "t.md").exists()


async def test_paths_outside_the_roots_are_refused(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path
) -> None:
    outside = _write(tmp_path, "outside/secret.md", ENGLISH_ARTICLE)
    _write(hostd_roots, "in/a.md", ENGLISH_ARTICLE)
    (hostd_roots / "in" / "link.md").symlink_to(outside)
    by_files = await _summarize(
        hostd_data_dir, hostd_roots, {"files": [str(outside), "../outside/secret.md"]}
    )
    assert by_files["error"]["code"] == "PATH_NOT_ALLOWED"
    assert [p["code"] for p in by_files["error"]["details"]["problems"]] == ["PATH_NOT_ALLOWED"] * 2
    linked = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "l.md"})
    assert linked["article_count"] == 1
    assert linked["errors"][0]["code"] == "PATH_NOT_ALLOWED"
    for bad_output in ["../x.md", str(tmp_path / "x.md"), "/etc/x.md"]:
        refused = await _summarize(
            hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": bad_output}
        )
        assert refused["error"]["code"] == "PATH_NOT_ALLOWED", bad_output
    escaping_glob = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "glob": "../../**/*.md"}
    )
    assert escaping_glob["error"]["code"] == "INVALID_ARGUMENT"


def test_chinese_sentences_keep_closing_quotes_and_brackets() -> None:
    text = "他说：“今天很好。”然后离开了！（这是补充。）最后一句；English follows. Done?"
    assert split_sentences(text) == [
        "他说：“今天很好。”",
        "然后离开了！",
        "（这是补充。）",
        "最后一句；",
        "English follows.",
        "Done?",
    ]


async def test_a_zh_server_says_why_a_file_was_skipped_in_chinese(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    _write(hostd_roots, "in/good.md", ENGLISH_ARTICLE)
    _write(hostd_roots, "in/bad.md", b"\xff\xfe\x00garbage\x80")
    mixed = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "m.md"}, language="zh"
    )
    assert mixed["status"] == "success"
    assert mixed["article_count"] == 1
    assert [e["code"] for e in mixed["errors"]] == ["READ_ERROR"]
    assert mixed["errors"][0]["message"] == "无法读取：不是 UTF-8 文本"
    assert mixed["warnings"] == ["已跳过 bad.md：不是 UTF-8 文本。"]
    assert mixed["message"].startswith("已将 1 篇文章汇总到")


async def test_the_digest_limits_take_their_new_and_their_first_spelling(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    from hostd_wechat.models import Settings

    for key in ("max_digest_chars", "summary_max_output_chars"):
        assert Settings.model_validate({key: 1234}).max_digest_chars == 1234
    for key in ("max_sampling_prompt_chars", "sampling_prompt_max_chars"):
        assert Settings.model_validate({key: 5678}).max_sampling_prompt_chars == 5678
    for copy in range(4):
        _write(hostd_roots, f"in/copy{copy}.md", ENGLISH_ARTICLE)
    too_long = await _summarize(
        hostd_data_dir,
        hostd_roots,
        {"input_dir": "in", "output_path": "t.md"},
        settings={"wechat": {"max_digest_chars": 1000}},
        language="zh",
    )
    assert too_long["error"]["code"] == "TOO_LONG"
    assert too_long["error"]["details"]["budget"] == 1000
    assert "max_digest_chars" in too_long["error"]["message"]
    assert "brief" in too_long["error"]["hint"]
    assert "characters" not in too_long["error"]["message"]
