"""The real plugins on a stateless HTTP server (no session): what needs the client degrades
clearly on the 2025 era and keeps working on 2026-07-28, and no call waits for the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import HttpServer, envelope_of, root_for, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ARTICLE = """---
title: Tea Harvest Report
account_name: Leaf Weekly
---

# Tea Harvest Report

Spring rain came early this year and the first flush was picked two weeks ahead of schedule.
Growers in the hills reported a smaller but sweeter crop, and prices rose at the first auction.
"""
MODEL_SUMMARY = "The client's model read this article about tea harvests."


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_roots_and_sampling_on_a_stateless_server(
    tmp_path: Path, every_plugin: list[str], mode: str
) -> None:
    configured = tmp_path / "all"
    project = configured / "project"
    (project / "in").mkdir(parents=True)
    (project / "in" / "tea.md").write_text(ARTICLE, encoding="utf-8")
    asked: list[str] = []

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[root_for(project)])

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        text = f"=== 1 ===\n{MODEL_SUMMARY}"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="m"
        )

    (tmp_path / "server").mkdir()
    config = write_config(
        tmp_path / "server",
        ["summary-writer", "wechat"],
        config={
            "language": "en",
            "allowed_roots": [str(configured)],
            "profiles": {
                "default": {"plugins": ["summary-writer", "wechat"], "transport": {"stateless": True}}
            },
        },
    )
    with HttpServer.start(config, cwd=tmp_path) as server:
        async with server.client(mode=mode, list_roots_callback=roots, sampling_callback=sample) as client:
            with anyio.fail_after(60):  # nothing waits for an answer the client cannot give
                written = envelope_of(
                    await client.call_tool(
                        "update_summary", {"content": "# yes", "file_path": str(project / "a.md")}
                    )
                )
                beside = envelope_of(
                    await client.call_tool(
                        "update_summary", {"content": "# b", "file_path": str(configured / "b.md")}
                    )
                )
                digest = envelope_of(
                    await client.call_tool(
                        "summarize_articles",
                        {"input_dir": str(project / "in"), "output_path": str(project / "digest.md")},
                    )
                )
    assert written["status"] == "success"
    if mode == "legacy":
        # No session, so no way to ask: the configured roots only, and the plugin's own summary.
        assert asked == []
        assert beside["status"] == "success"  # outside the client's root, inside allowed_roots
        assert Path(written["file_path"]) == (project / "a.md").resolve()
        assert digest["summarizer"] == "extractive"
        assert MODEL_SUMMARY not in (project / "digest.md").read_text(encoding="utf-8")
    else:
        # 2026-07-28 asks inside the result: it needs no session, so both still work.
        assert "roots" in asked
        assert "sampling" in asked
        assert beside["error"]["code"] == "PATH_NOT_ALLOWED"  # the client's root narrows writes
        assert digest["summarizer"] == "sampling"
        assert MODEL_SUMMARY in (project / "digest.md").read_text(encoding="utf-8")
