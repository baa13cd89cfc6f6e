"""The 2026-07-28 input_required round trip as any client sees it on the wire: plain JSON-RPC
over HTTP to a real ``hostd serve``, no MCP SDK on the client side (as a TypeScript or
hand-written client would speak it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import HttpServer, write_config

MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, module_probe_install: dict[str, str]
) -> Iterator[HttpServer]:
    """One server for the module: it keeps nothing between calls (that is the point)."""
    # No allowed_roots and started in /: only the client's roots can give a folder.
    config = write_config(tmp_path_factory.mktemp("wire"), ["probe"], config={"language": "en"})
    with HttpServer.start(config, env=module_probe_install, cwd=Path("/")) as http:
        yield http


def call_tool(
    server: HttpServer, name: str, arguments: dict[str, Any], capabilities: dict[str, Any], **extra: Any
) -> Any:
    """One ``tools/call`` with the 2026-07-28 envelope; its JSON-RPC result."""
    message = rpc(server, name, arguments, capabilities, **extra)
    assert "result" in message, message
    return message["result"]


def rpc(
    server: HttpServer, name: str, arguments: dict[str, Any], capabilities: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One ``tools/call`` with the 2026-07-28 envelope; the whole JSON-RPC answer."""
    import httpx2

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
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    response = httpx2.post(server.url, content=json.dumps(body), headers=headers, timeout=30)
    assert response.status_code in (200, 400), response.text  # a JSON-RPC error comes with 400
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return next(m for m in map(json.loads, data) if m.get("id") == 1)
    answer: dict[str, Any] = response.json()
    return answer


def test_roots_are_asked_for_in_the_result_and_used_on_the_retry(server: HttpServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    first = call_tool(server, "where", {}, {"roots": {}})
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"].values()) == [{"method": "roots/list"}]
    (key,) = first["inputRequests"]
    answer = {"roots": [{"uri": workspace.as_uri(), "name": "ws"}]}
    done = call_tool(
        server, "where", {}, {"roots": {}}, inputResponses={key: answer}, requestState=first["requestState"]
    )
    assert done.get("resultType", "complete") == "complete"
    assert done["isError"] is False
    assert done["structuredContent"]["roots"] == [str(workspace.resolve())]


@pytest.mark.parametrize("shape", ["one block", "a list of blocks"])
def test_sampling_is_asked_for_in_the_result_and_answered_on_the_retry(
    server: HttpServer, shape: str
) -> None:
    first = call_tool(server, "ask", {"prompt": "two words?"}, {"sampling": {}})
    assert first["resultType"] == "input_required"
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "two words?"}}
    ]
    assert request["params"]["maxTokens"] == 50
    block = {"type": "text", "text": "green tea"}
    answer = {
        "role": "assistant",
        "content": block if shape == "one block" else [block],
        "model": "raw-model",
    }
    done = call_tool(
        server,
        "ask",
        {"prompt": "two words?"},
        {"sampling": {}},
        inputResponses={key: answer},
        requestState=first["requestState"],
    )
    assert done["structuredContent"]["available"] is True
    assert done["structuredContent"]["text"] == "green tea"


def test_a_client_offering_neither_gets_its_answer_at_once(server: HttpServer) -> None:
    asked = call_tool(server, "ask", {"prompt": "anyone?"}, {})
    assert asked.get("resultType", "complete") == "complete"
    assert asked["structuredContent"]["available"] is False
    where = call_tool(server, "where", {}, {})
    assert where["isError"] is True
    assert where["structuredContent"]["error"]["code"] == "PATH_NOT_ALLOWED"


def test_a_request_state_the_server_did_not_seal_is_refused(server: HttpServer, tmp_path: Path) -> None:
    """The state comes back from the client: a hand-made one must not stand in for real answers."""
    made_up = json.dumps({"v": 1, "answers": {"roots": {"roots": [{"uri": tmp_path.as_uri()}]}}, "asked": []})
    answer = rpc(server, "where", {}, {"roots": {}}, requestState=made_up)
    assert answer["error"]["code"] == -32602
