"""A ``zh`` server says everything of its own in Chinese: diagrams, status changes, repairs.

What may stay Latin: ids (sessions, branches), numbers, Mermaid's own syntax and class names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deep_thinking_support import PLUGIN, config_for, thought
from hostd_testing import Client, call, in_memory_client, ok

pytestmark = pytest.mark.anyio

#: Latin words a diagram of ours may hold in a zh server: ids of this test's session and Mermaid syntax.
MERMAID_SYNTAX = re.compile(
    r"flowchart TD|subgraph|\bend\b|classDef [a-z]+ [^\n]*|:::[a-z]+|\b[tmb]\d+\b|-->|-\.->|s1|side|#\d+;"
)


async def chinese_session(client: Client) -> None:
    steps = [
        thought(1, 3, "确定目标"),
        thought(2, 3, "重新确定目标", isRevision=True, revisesThought=1),
        thought(3, 3, "修订不存在的思考", isRevision=True, revisesThought=9),
        thought(2, 3, "另一条路", branchFromThought=1, branchId="side"),
        thought(3, 3, "悬空分支", branchFromThought=7, branchId="side", needsMoreThoughts=True),
    ]
    for arguments in steps:
        await ok(client, "sequential_thinking", session_id="s1", **arguments)


async def test_diagrams_are_chinese_in_a_chinese_server(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        await chinese_session(zh)
        mermaid = (await ok(zh, "visualize_session", session_id="s1", format="mermaid"))["diagram"]
        ascii_chart = (await ok(zh, "visualize_session", session_id="s1", format="ascii"))["diagram"]
    left = MERMAID_SYNTAX.sub("", mermaid)
    assert not re.search(r"[A-Za-z]{2,}", left), left
    assert "修订" in mermaid
    assert "分支" in mermaid
    assert "缺失" in mermaid
    left = re.sub(r"\bs1\b|\bside\b", "", ascii_chart)
    assert not re.search(r"[A-Za-z]{2,}", left), left
    for words in ("会话", "状态：进行中", "主线", "修订", "分支", "缺失", "总数调整", "需要更多思考"):
        assert words in ascii_chart, (words, ascii_chart)


async def test_english_diagrams_keep_their_words(client: Client) -> None:
    await ok(client, "sequential_thinking", session_id="s1", **thought(1, 2, "Start"))
    await ok(
        client,
        "sequential_thinking",
        session_id="s1",
        **thought(2, 2, "Again", isRevision=True, revisesThought=5),
    )
    mermaid = (await ok(client, "visualize_session", session_id="s1", format="mermaid"))["diagram"]
    assert "revision" in mermaid
    assert "missing" in mermaid
    assert "|revises|" in mermaid
    ascii_chart = (await ok(client, "visualize_session", session_id="s1", format="ascii"))["diagram"]
    assert "Main line" in ascii_chart
    assert "revises [5] (missing)" in ascii_chart


async def test_status_changes_and_exports_say_the_status_in_chinese(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        await ok(zh, "sequential_thinking", session_id="s1", **thought(1, 1, "想法"))
        changed = await ok(zh, "update_session_status", session_id="s1", status="archived")
        assert "进行中 → 已归档" in changed["message"], changed["message"]
        text = (await ok(zh, "export_session", session_id="s1", format="text"))["content"]
        assert "已归档" in text
        assert "archived" not in text


async def test_repairs_and_import_refusals_are_said_in_chinese(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    config = config_for(hostd_roots, "zh")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as zh:
        for number in range(1, 4):
            await ok(zh, "sequential_thinking", **thought(number, 3, "想法", session_id="hurt"))
    document = hostd_data_dir / "deep-thinking" / "sessions" / "hurt.json"
    document.write_bytes(document.read_bytes()[:40])
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as zh:
        answer = await ok(zh, "sequential_thinking", **thought(4, 4, "想法", session_id="hurt"))
        (warning,) = answer["warnings"]
        assert warning["code"] == "RECOVERED"
        assert "会话文档已损坏" in warning["message"]
        assert "备份" in warning["message"]
        assert "日志" in warning["message"]
        left = re.sub(r"\S+\.json", "", warning["message"])  # the backup's file name stays as it is
        assert not re.search(r"[A-Za-z]{2,}", left), warning["message"]
        refused = await call(
            zh,
            "import_session",
            path_or_data='{"session_id": "x", "thoughts": [{"thought_number": 0, "content": "a"}]}',
        )
        assert refused["error"]["code"] == "INVALID_ARGUMENT", refused
        assert "thoughts.0.thought_number" in refused["message"]
        assert "必须大于或等于 1" in refused["message"]
