"""Helpers shared by the team-serving tests: plugins installed for real ``hostd serve`` processes,
tokens files, and raw MCP requests over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def install_team_plugins(tmp_path: Path) -> dict[str, str]:
    """The probe and team-probe plugins installed by entry point: the env for subprocesses."""
    from hostd_testing import install_plugin_source, pythonpath_with

    folder = tmp_path / "site"
    for name, module in (("probe", "probe_plugin"), ("team", "team_probe_plugin")):
        source = (HERE / f"{module}.py").read_text(encoding="utf-8")
        install_plugin_source(folder, entry_point=name, module=module, source=source)
    return pythonpath_with(folder)


def write_tokens(path: Path, members: dict[str, Any]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(members), encoding="utf-8")
    return path


def post(url: str, body: Any, headers: dict[str, str] | None = None, *, client: Any = None) -> Any:
    """POST one JSON-RPC message; with ``client`` (an ``httpx2.Client``) on its connections, which
    saves the 50 ms of making a client in a test that posts hundreds of times."""
    import httpx2

    send = httpx2.post if client is None else client.post
    return send(url, content=json.dumps(body), headers={**MCP_HEADERS, **(headers or {})}, timeout=30)


def sse_messages(response: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer, whether it came as SSE events or plain JSON."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return [json.loads(item) for item in data if item]
    return [response.json()]


MODERN = "2026-07-28"


def call_modern(
    url: str,
    name: str,
    arguments: dict[str, Any],
    capabilities: dict[str, Any],
    *,
    token: str | None = None,
    **extra: Any,
) -> Any:
    """One 2026-07-28 ``tools/call`` as plain JSON-RPC over HTTP; the whole JSON-RPC answer."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            **extra,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        },
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    response = post(url, body, headers)
    assert response.status_code in (200, 400), response.text
    return next(message for message in sse_messages(response) if message.get("id") == 1)
