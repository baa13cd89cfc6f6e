"""The thinking templates as MCP prompts: built-in and user templates, rendered, completed."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from deep_thinking_support import PLUGIN, thought
from hostd_testing import Client, MCPError, ok

pytestmark = pytest.mark.anyio

RELEASE_YAML = """\
name: {en: Release check, zh: 发布检查}
description: Before a release goes out.
steps:
  - title: Read the changelog
    guidance: What changed since the last release?
  - title: Decide
    guidance: Ship, or say what blocks it.
"""


async def test_built_in_and_user_templates_are_prompts(client: Client, hostd_data_dir: Path) -> None:
    folder = hostd_data_dir / PLUGIN / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "release_check.yaml").write_text(RELEASE_YAML, encoding="utf-8")
    names = [prompt.name for prompt in (await client.list_prompts()).prompts]
    assert names == [
        "think_problem_solving",
        "think_root_cause_analysis",
        "think_decision_making",
        "think_research_plan",
        "think_release_check",
    ]
    got = await client.get_prompt("think_release_check", {"topic": "v2.1"})
    content = got.messages[0].content
    assert isinstance(content, types.TextContent)
    assert got.description == "Before a release goes out."
    assert "1. Read the changelog: What changed since the last release?" in content.text
    assert "2. Decide: Ship, or say what blocks it." in content.text
    assert "in a new session" in content.text
    assert content.text.endswith("v2.1")
    for arguments in ({}, {"topic": "   "}):
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("think_release_check", arguments)
        assert caught.value.error.code == -32602
        assert caught.value.error.data["argument"] == "topic"


async def test_session_ids_complete_newest_first(client: Client) -> None:
    for session_id in ("alpha-1", "beta", "alpha-2"):
        await ok(client, "sequential_thinking", **thought(1, 2, "start", session_id=session_id))
    ref = types.PromptReference(type="ref/prompt", name="think_problem_solving")
    sessions = await client.complete(ref, {"name": "session_id", "value": "alpha"})
    assert (sessions.completion.values, sessions.completion.total) == (["alpha-2", "alpha-1"], 2)
    topics = await client.complete(ref, {"name": "topic", "value": "a"})
    assert topics.completion.values == []
