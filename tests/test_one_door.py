"""One door: every surface x every kind of member x representative tools, against one real server.

A real ``hostd serve`` (memory and tasks over Streamable HTTP, with the dashboard and the audit
trail on) is asked by members of every kind through MCP and the dashboard, and ``hostd call``
runs in-process tools for the local user. Each attempt's outcome must be what the host's one
access policy (``AccessPolicy.may``) says for that member and tool, and the audit trail must hold
exactly one record of each attempt, with its member, surface and outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from dashboard_support import csrf_of, form_post
from hostd.core.config import load_config
from hostd.core.host import Host
from hostd.core.identity import Member
from hostd_testing import HttpServer, write_config
from team_support import MODERN, call_modern, post, sse_messages

TOKENS = {
    "alice": "alice-one-door-token-0123456789",
    "reader": "reader-one-door-token-0123456789",
    "tasker": "tasker-one-door-token-0123456789",
}
#: A member who was removed from the tokens file: their token is no longer anyone's.
GONE_TOKEN = "gone-one-door-token-0123456789"
PROFILES = {"alice": None, "reader": "reader", "tasker": "tasksonly"}
SEED_URI = "door://seed"
#: Representative tools (a read and a write of each plugin, and one that does not exist).
TOOLS: dict[str, dict[str, Any]] = {
    "read_memory": {"uri": SEED_URI},
    "create_memory": {"uri": "door://new-{member}", "content": "made through the door"},
    "list_tasks": {},
    "create_task": {"title": "a task of {member}"},
    "no_such_tool": {},
}
#: Views inside the chat (``ui://`` documents) and the tool each stands for: a member may open a
#: view exactly when they may call that tool, and its write controls are the tools they may call.
VIEWS = {"ui://hostd/tasks/board": "list_tasks", "ui://hostd/memory/memory": "read_memory"}
#: Dashboard pages (path -> the tool each stands for) and one action.
PAGES = {"/ui/memory": "list_memories", "/ui/tasks": "list_tasks"}


@dataclass
class Door:
    server: HttpServer
    config: Path
    host: Host  # the same config, in this process: what the policy says


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    folder = tmp_path_factory.mktemp("door")
    tokens = folder / "tokens.yaml"
    tokens.write_text(
        "".join(
            f"{name}: {{token: {token}, profile: {PROFILES[name]}}}\n"
            if PROFILES[name]
            else f"{name}: {token}\n"
            for name, token in TOKENS.items()
        ),
        encoding="utf-8",
    )
    config = write_config(
        folder,
        config={
            "audit": {},
            "profiles": {
                "default": {
                    "plugins": ["memory", "tasks"],
                    "transport": {"type": "http", "tokens_file": str(tokens), "dashboard": True},
                },
                "reader": {
                    "plugins": ["memory", "tasks"],
                    "tools": {
                        "memory": {"include": ["list_memories", "read_memory", "search_memory"]},
                        "tasks": {"include": ["list_tasks", "get_task"]},
                    },
                },
                "tasksonly": {"plugins": ["tasks"]},
            },
        },
    )
    seeded = subprocess.run(
        [
            sys.executable,
            "-m",
            "hostd",
            "call",
            "create_memory",
            "--config",
            str(config),
            "--json",
            json.dumps({"uri": SEED_URI, "content": "seed"}),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seeded.returncode == 0, seeded.stderr
    host = Host(load_config(str(config), "default"))
    with HttpServer.start(config) as server:
        yield Door(server, config, host)


def audit(door: Door) -> list[dict[str, Any]]:
    """The trail as ``hostd audit --json`` reads it (the server writes it within half a second)."""
    import time

    time.sleep(1.5)
    read = subprocess.run(
        [sys.executable, "-m", "hostd", "audit", "--json", "--config", str(door.config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr
    return [json.loads(line) for line in read.stdout.splitlines()]


def arguments_for(tool: str, member: str) -> dict[str, Any]:
    return {
        key: value.format(member=member) if isinstance(value, str) else value
        for key, value in TOOLS[tool].items()
    }


def mcp_attempt(door: Door, token: str, tool: str, member: str) -> bool:
    """Whether an MCP call got through the door (a result, success or a tool's own error)."""
    try:
        answer = call_modern(door.server.url, tool, arguments_for(tool, member), {}, token=token)
    except AssertionError as refused:  # a 401 or 403 at the door
        assert "401" in str(refused) or "403" in str(refused) or "Unauthorized" in str(refused)
        return False
    if "error" in answer:  # JSON-RPC: a tool the member does not have, answered as an unknown one
        assert answer["error"]["code"] == -32602, answer
        return False
    assert "structuredContent" in answer["result"], answer
    return True


def read_resource(url: str, token: str, uri: str) -> dict[str, Any]:
    """One 2026-07-28 ``resources/read`` as plain JSON-RPC over HTTP; the whole JSON-RPC answer."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {
            "uri": uri,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "resources/read",
        "Mcp-Name": uri,
        "Authorization": f"Bearer {token}",
    }
    response = post(url, body, headers)
    answer: dict[str, Any] = next(message for message in sse_messages(response) if message.get("id") == 1)
    return answer


def read_view(door: Door, token: str, uri: str) -> dict[str, str | None] | None:
    """A view document as a 2026-07-28 client reads it: the tools its write controls may call (the
    document's config), or None when the door refused it."""
    answer = read_resource(door.server.url, token, uri)
    if "error" in answer:  # as if there were no such view (-32602 from 2026-07-28 on)
        assert (answer["error"]["code"], answer["error"]["data"]["code"]) == (-32602, "NOT_FOUND"), answer
        return None
    document = answer["result"]["contents"][0]["text"]
    config = document[document.index('id="hostd-config"') :]
    settings = json.loads(config[config.index(">") + 1 : config.index("</script>")])
    tools: dict[str, str | None] = settings["tools"]
    return tools


def test_a_view_opens_and_offers_write_controls_exactly_as_the_policy_says(door: Door) -> None:
    for member, token in TOKENS.items():
        who = Member(member, PROFILES[member])
        for uri, tool in VIEWS.items():
            tools = read_view(door, token, uri)
            assert (tools is not None) == door.host.access.may(who, tool), (member, uri)
            if tools is not None:
                assert {name for name, served in tools.items() if served} == {
                    name for name in tools if door.host.access.may(who, name)
                }, (member, uri)


def test_every_surface_and_member_gets_what_the_policy_says_and_each_attempt_is_recorded_once(
    door: Door,
) -> None:
    expected: Counter[tuple[str, str, str]] = Counter()  # (member, surface, tool) -> attempts
    refused: Counter[tuple[str, str, str]] = Counter()
    # MCP over Streamable HTTP.
    for member, token in TOKENS.items():
        who = Member(member, PROFILES[member])
        for tool in TOOLS:
            allowed = mcp_attempt(door, token, tool, member)
            assert allowed == door.host.access.may(who, tool), (member, tool)
            expected[(member, "mcp", tool)] += 1
            if not allowed:
                refused[(member, "mcp", tool)] += 1
    # A resource read is the member's call of the tool its kind follows (memory://: read_memory).
    for member, token in TOKENS.items():
        resource = read_resource(door.server.url, token, "memory://door/seed")
        allowed = door.host.access.may(Member(member, PROFILES[member]), "read_memory")
        assert ("result" in resource) == allowed, (member, resource)
        if allowed:
            expected[(member, "mcp", "read_memory")] += 1
    for tool in ("read_memory", "create_task"):  # a removed member: refused at the door, every time
        assert not mcp_attempt(door, GONE_TOKEN, tool, "gone")
        expected[("-", "mcp", "-")] += 1
        refused[("-", "mcp", "-")] += 1
    # The dashboard: each member's pages and a delete action.
    for member, token in TOKENS.items():
        who = Member(member, PROFILES[member])
        with httpx.Client(base_url=door.server.base, follow_redirects=False, timeout=60) as client:
            page = client.get("/ui/signin")
            answer = form_post(
                client, "/ui/signin", {"csrf": csrf_of(page.text), "token": token, "next": "/ui/"}
            )
            assert answer.status_code == 303, answer.text
            for path, tool in PAGES.items():
                response = client.get(path)
                allowed = door.host.access.may(who, tool)
                assert response.status_code == (200 if allowed else 403), (member, path, response.status_code)
                if not allowed:
                    expected[(member, "ui", tool)] += 1
                    refused[(member, "ui", tool)] += 1
            csrf = csrf_of(client.get("/ui/").text)
            response = form_post(client, "/ui/memory/delete", {"csrf": csrf, "uri": f"door://new-{member}"})
            allowed = door.host.access.may(who, "delete_memory")
            assert (response.status_code in (200, 303)) == allowed, (
                member,
                response.status_code,
                response.text,
            )
            expected[(member, "ui", "delete_memory")] += 1
            if not allowed:
                refused[(member, "ui", "delete_memory")] += 1
    # The CLI: the local user, in-process.
    for tool in ("read_memory", "no_such_tool"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "hostd",
                "call",
                tool,
                "--config",
                str(door.config),
                "--json",
                json.dumps(arguments_for(tool, "local")),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        envelope = json.loads(done.stdout)
        allowed = door.host.access.may(None, tool)
        assert (envelope["status"] == "success") == allowed, envelope
    # A plugin's command (``hostd tasks export``) is a call of the local user's like ``hostd call``.
    exported = subprocess.run(
        [sys.executable, "-m", "hostd", "tasks", "export", "--config", str(door.config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    entries = [e for e in audit(door) if e["surface"] != "cli" or e["tool"] != "create_memory"]  # the seed
    mcp_and_actions = Counter(
        (e["member"], e["surface"], e["tool"])
        for e in entries
        if e["surface"] == "mcp"
        or (e["surface"] == "ui" and (e["tool"] == "delete_memory" or e["outcome"] != "ok"))
    )
    assert mcp_and_actions == expected
    refusals = Counter(
        (e["member"], e["surface"], e["tool"])
        for e in entries
        if e["surface"] != "cli" and e["outcome"] in ("NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED")
    )
    assert refusals == refused
    cli = [(e["tool"], e["outcome"]) for e in entries if e["surface"] == "cli"]
    assert cli == [("read_memory", "ok"), ("no_such_tool", "NOT_FOUND"), ("export_tasks", "ok")]
    # Pages that were served were read through the pipeline too, as the member.
    page_reads = {(e["member"], e["tool"]) for e in entries if e["surface"] == "ui" and e["outcome"] == "ok"}
    assert ("alice", "list_memories") in page_reads
    assert ("tasker", "list_tasks") in page_reads


@pytest.mark.parametrize(
    ("limits", "outcome"),
    [
        ({"tools": {"list_tasks": {"calls_per_minute": 2, "burst": 2}}}, "quota"),
        ({"per_member": {"calls_per_minute": 1000, "requests_per_minute": 2, "burst": 1000}}, "rate"),
    ],
)
def test_the_dashboard_counts_against_the_members_quotas_and_request_rate(
    tmp_path: Path, limits: dict[str, Any], outcome: str
) -> None:
    """Finding: dashboard pages and actions ran the tool function directly, past the member's
    quotas and request rate. Now the board's list_tasks is a call of the member's like an MCP one:
    the tool's quota answers RATE_LIMITED, and the request rate 429 with Retry-After."""
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {TOKENS['alice']}\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        config={
            "audit": {},
            "limits": limits,
            "profiles": {
                "default": {
                    "plugins": ["tasks"],
                    "transport": {"type": "http", "tokens_file": str(tokens), "dashboard": True},
                }
            },
        },
    )
    with (
        HttpServer.start(config) as server,
        httpx.Client(base_url=server.base, follow_redirects=False, timeout=60) as client,
    ):
        page = client.get("/ui/signin")
        signed = form_post(
            client, "/ui/signin", {"csrf": csrf_of(page.text), "token": TOKENS["alice"], "next": "/ui/"}
        )
        assert signed.status_code == 303, signed.text
        pages = [client.get("/ui/tasks?status=pending") for _ in range(4)]
    statuses = [page.status_code for page in pages]
    read = subprocess.run(
        [sys.executable, "-m", "hostd", "audit", "--json", "--tool", "list_tasks", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    entries = [(e["member"], e["surface"], e["outcome"]) for e in map(json.loads, read.stdout.splitlines())]
    if outcome == "quota":  # the board shows the tool's refusal; each call is recorded, refused ones too
        assert statuses == [200] * 4
        assert "quota for list_tasks is used up" in pages[2].text
        assert "quota" not in pages[1].text
        assert entries == [("alice", "ui", "ok")] * 2 + [("alice", "ui", "RATE_LIMITED")] * 2
    else:  # the request rate refuses the page itself
        assert statuses == [200, 200, 429, 429], statuses
        assert int(pages[2].headers["retry-after"]) >= 1
        assert entries == [("alice", "ui", "ok")] * 2


def test_a_resource_read_counts_against_the_quota_of_the_tool_its_kind_follows(tmp_path: Path) -> None:
    """Reading ``memory://`` is reading a memory: read_memory's quota answers RATE_LIMITED (its
    retry time in the error's data) and each read is recorded as that tool's call, refused or not."""
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {TOKENS['alice']}\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        config={
            "audit": {},
            "limits": {"tools": {"read_memory": {"calls_per_minute": 2, "burst": 2}}},
            "profiles": {"default": {"plugins": ["memory"], "transport": {"tokens_file": str(tokens)}}},
        },
    )
    with HttpServer.start(config) as server:
        created = call_modern(
            server.url, "create_memory", {"uri": "door://quota", "content": "x"}, {}, token=TOKENS["alice"]
        )
        assert created["result"]["structuredContent"]["status"] == "success", created
        answers = [read_resource(server.url, TOKENS["alice"], "memory://door/quota") for _ in range(3)]
    assert ["result" in answer for answer in answers] == [True, True, False]
    assert answers[2]["error"]["data"]["code"] == "RATE_LIMITED", answers[2]
    assert answers[2]["error"]["data"]["retry_after"] > 0
    read = subprocess.run(
        [sys.executable, "-m", "hostd", "audit", "--json", "--tool", "read_memory", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    entries = [(e["member"], e["surface"], e["outcome"]) for e in map(json.loads, read.stdout.splitlines())]
    assert entries == [("alice", "mcp", "ok")] * 2 + [("alice", "mcp", "RATE_LIMITED")]


async def _prompt_and_completions(server: HttpServer) -> None:
    import mcp_types as types

    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    async with server.client(headers=headers) as client:
        prompt = await client.get_prompt("think_problem_solving", {"topic": "the door"})
        assert prompt.messages
        ref = types.PromptReference(type="ref/prompt", name="think_problem_solving")
        await client.complete(ref, {"name": "session_id", "value": "a"})
        template = types.ResourceTemplateReference(type="ref/resource", uri="memory://{domain}/{+path}")
        await client.complete(template, {"name": "domain", "value": "d"})


def test_a_prompt_and_completions_are_calls_of_the_tools_they_follow(tmp_path: Path) -> None:
    """Prompts and completions are ways in too: each is recorded once as the member's call of the
    tool its source follows (deep-thinking's prompts: create_session; memory's URIs: read_memory)."""
    import anyio

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {TOKENS['alice']}\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        config={
            "audit": {},
            "profiles": {
                "default": {"plugins": ["memory", "deep-thinking"], "transport": {"tokens_file": str(tokens)}}
            },
        },
    )
    with HttpServer.start(config) as server:
        anyio.run(_prompt_and_completions, server)
    read = subprocess.run(
        [sys.executable, "-m", "hostd", "audit", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    entries = [
        (e["member"], e["surface"], e["tool"], e["outcome"])
        for e in map(json.loads, read.stdout.splitlines())
    ]
    assert sorted(entries) == sorted(
        [
            ("alice", "mcp", "create_session", "ok"),
            ("alice", "mcp", "create_session", "ok"),
            ("alice", "mcp", "read_memory", "ok"),
        ]
    )
