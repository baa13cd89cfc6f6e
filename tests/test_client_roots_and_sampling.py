"""The client's roots and model reach the real plugins on both protocol eras, in-process and
through a real ``hostd serve`` over stdio and HTTP.

Before 2026-07-28 the server asks with requests of its own; on 2026-07-28 it asks inside the
call's result and the SDK's client answers and calls again. Writes and the wechat digest must
behave the same either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import (
    HttpServer,
    envelope_of,
    in_memory_client,
    prompt_text,
    root_for,
    served_client,
    write_config,
)
from mcp import Client

pytestmark = pytest.mark.anyio

PLUGINS = ["summary-writer", "wechat"]
ERAS = ["legacy", "2026-07-28"]
TRANSPORTS = [
    "memory",
    pytest.param("stdio", marks=pytest.mark.slow),
    pytest.param("http", marks=pytest.mark.slow),
]
MODEL_SUMMARY = "The client's model read this article about tea harvests."
ARTICLE = """---
title: Tea Harvest Report
account_name: Leaf Weekly
---

# Tea Harvest Report

Spring rain came early this year and the first flush was picked two weeks ahead of schedule.
Growers in the hills reported a smaller but sweeter crop, and prices rose at the first auction.
"""


def roots_callback(*paths: Path) -> Any:
    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[root_for(path) for path in paths])

    return list_roots


def sampling_callback(prompts: list[str]) -> Any:
    """The client's model: one known summary, in the block shape the digest asks for."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(prompt_text(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"=== 1 ===\n{MODEL_SUMMARY}"),
            model="test-model",
        )

    return sample


class Served:
    """One server (in-process, or a real process per client on stdio, or one HTTP process)."""

    def __init__(self, transport: str, folder: Path, config: dict[str, Any], cwd: Path) -> None:
        self.transport, self.folder, self.config, self.cwd = transport, folder, config, cwd
        folder.mkdir(parents=True, exist_ok=True)
        self.config_path = write_config(folder, PLUGINS, config={"language": "en", **config})
        self.http: HttpServer | None = None

    @asynccontextmanager
    async def client(self, mode: str, **client_options: Any) -> AsyncIterator[Client]:
        if self.transport == "memory":
            async with in_memory_client(
                PLUGINS,
                data_dir=self.folder / "data",
                config={"language": "en", **self.config},
                cwd=self.cwd,
                mode=mode,
                **client_options,
            ) as client:
                yield client
        elif self.transport == "stdio":
            async with served_client(self.config_path, cwd=self.cwd, mode=mode, **client_options) as client:
                yield client
        else:
            assert self.http is not None
            async with self.http.client(mode=mode, **client_options) as client:
                yield client


@asynccontextmanager
async def serving(transport: str, folder: Path, config: dict[str, Any], cwd: Path) -> AsyncIterator[Served]:
    served = Served(transport, folder, config, cwd)
    if transport != "http":
        yield served
        return
    with HttpServer.start(served.config_path, cwd=cwd) as http:
        served.http = http
        yield served


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(60):  # a missing answer must never leave the call hanging
        return envelope_of(await client.call_tool(tool, arguments))


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_root_narrows_writes_and_the_digest_samples(
    tmp_path: Path, every_plugin: list[str], mode: str, transport: str
) -> None:
    configured = tmp_path / "all"
    project = configured / "project"
    (project / "in").mkdir(parents=True)
    (project / "in" / "tea.md").write_text(ARTICLE, encoding="utf-8")
    prompts: list[str] = []
    config = {"allowed_roots": [str(configured)]}
    async with serving(transport, tmp_path / "server", config, tmp_path) as served:
        async with served.client(
            mode, list_roots_callback=roots_callback(project), sampling_callback=sampling_callback(prompts)
        ) as client:
            outside = await call(
                client, "update_summary", {"content": "# no", "file_path": str(configured / "outside.md")}
            )
            inside = await call(client, "update_summary", {"content": "# yes", "file_path": "inside.md"})
            digest = await call(client, "summarize_articles", {"input_dir": "in", "output_path": "digest.md"})
        async with served.client(mode) as plain:  # no roots, no sampling: as before
            configured_write = await call(
                plain, "update_summary", {"content": "# plain", "file_path": "plain.md"}
            )
            extractive = await call(
                plain, "summarize_articles", {"input_dir": "project/in", "output_path": "plain-digest.md"}
            )

    assert outside["error"]["code"] == "PATH_NOT_ALLOWED"
    assert not (configured / "outside.md").exists()
    assert inside["status"] == "success"
    assert Path(inside["file_path"]) == (project / "inside.md").resolve()
    assert digest["summarizer"] == "sampling"
    assert digest["warnings"] == []
    assert MODEL_SUMMARY in (project / "digest.md").read_text(encoding="utf-8")
    assert len(prompts) == 1
    assert "Tea Harvest Report" in prompts[0]
    assert Path(configured_write["file_path"]) == (configured / "plain.md").resolve()
    assert extractive["summarizer"] == "extractive"
    assert MODEL_SUMMARY not in (configured / "plain-digest.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", ERAS)
async def test_an_ide_without_allowed_roots_writes_inside_its_root(
    tmp_path: Path, every_plugin: list[str], mode: str, transport: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # IDEs start stdio servers in / (never an implicit root): only the client's root can allow writes.
    async with serving(transport, tmp_path / "server", {}, Path("/")) as served:
        async with served.client(mode, list_roots_callback=roots_callback(workspace)) as client:
            written = await call(client, "update_summary", {"content": "# notes", "file_path": "notes.md"})
        async with served.client(mode) as plain:
            refused = await call(plain, "update_summary", {"content": "# notes", "file_path": "other.md"})

    assert written["status"] == "success", written
    assert (workspace / "notes.md").read_text(encoding="utf-8").startswith("# notes")
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"
    assert refused["error"]["details"]["reason"] == "NO_ROOT"
