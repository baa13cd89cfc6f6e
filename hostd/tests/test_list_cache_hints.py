"""2026-07-28 caching hints on list results: the tool, prompt and resource-template lists say how
long a client may keep them (``ttlMs``) and whether a shared cache may hand them to anyone
(``cacheScope``). Seen as raw JSON-RPC over a real ``hostd serve``: what the wire carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hostd.protocol.handlers import LIST_TTL_MS, PROMPT_LIST_TTL_MS
from hostd_testing import HttpServer, write_config
from hostd_testing.raw_stdio import handshake, raw_stdio_server, request

PLUGINS = ["memory", "tasks", "deep-thinking"]
LISTS = ["tools/list", "prompts/list", "resources/templates/list"]


def modern(url: str, method: str, request_id: int = 1) -> dict[str, Any]:
    """One 2026-07-28 request as plain JSON-RPC over HTTP (no session, as that revision speaks)."""
    import httpx2

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    answer = httpx2.post(url, content=json.dumps(body), headers=headers, timeout=60).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def hints(result: dict[str, Any]) -> tuple[Any, Any]:
    return result.get("ttlMs"), result.get("cacheScope")


def test_one_profile_lists_are_public_and_kept_prompts_private(tmp_path: Path) -> None:
    """With no profile but the served one every member sees the same tools and templates: a shared
    cache may serve them. Prompts may be a member's own template files, so they stay private."""
    with HttpServer.start(write_config(tmp_path, PLUGINS)) as server:
        answers = {method: modern(server.url, method) for method in LISTS}
    assert answers["tools/list"]["tools"]
    assert answers["resources/templates/list"]["resourceTemplates"]
    assert answers["prompts/list"]["prompts"]
    assert {method: hints(result) for method, result in answers.items()} == {
        "tools/list": (LIST_TTL_MS, "public"),
        "resources/templates/list": (LIST_TTL_MS, "public"),
        "prompts/list": (PROMPT_LIST_TTL_MS, "private"),
    }
    assert LIST_TTL_MS == 600_000
    assert PROMPT_LIST_TTL_MS == 60_000


def test_a_config_with_member_profiles_keeps_every_list_private(tmp_path: Path) -> None:
    """A member over HTTP may be limited to another profile of the config, so one member's list is
    not another's: no list may be handed across members, even the served profile's whole list."""
    profiles = {"default": {"plugins": PLUGINS}, "readonly": {"plugins": ["memory"]}}
    with HttpServer.start(write_config(tmp_path, config={"profiles": profiles})) as server:
        answers = {method: modern(server.url, method) for method in LISTS}
    assert {method: hints(result) for method, result in answers.items()} == {
        "tools/list": (LIST_TTL_MS, "private"),
        "resources/templates/list": (LIST_TTL_MS, "private"),
        "prompts/list": (PROMPT_LIST_TTL_MS, "private"),
    }


def test_the_handshake_era_carries_no_hints(tmp_path: Path) -> None:
    """2025-11-25 has no ``ttlMs``/``cacheScope``: its list results stay as that revision defines them."""
    with raw_stdio_server(write_config(tmp_path, PLUGINS)) as server:
        server.send(*handshake(), *(request(2 + n, method) for n, method in enumerate(LISTS)))
        answers = server.read_until({2, 3, 4})
        server.finish(timeout=30)
    results = [answer["result"] for answer in answers if answer.get("id") in (2, 3, 4)]
    assert len(results) == 3
    assert all(result for result in results)
    assert [hints(result) for result in results] == [(None, None)] * 3
