"""A team host with the tasks, thinking and memory pages, seeded through the tools, for the
dashboard page tests (ASGI, ``test_dashboard_pages``) and the browser tests
(``test_dashboard_browser``).

Members: ``alice`` and ``bob`` with every tool, ``reader`` whose profile serves only reading
tools. The seed: tasks with dependencies, one failed blocker, a subtask, labels, notes; a thinking
session with a branch and a revision; a few memories; and stored content that tries to run
script (in task titles and notes, thoughts and Mermaid labels).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2 as httpx
from hostd.core.config import TransportConfig, config_from_mapping
from hostd.core.host import Host
from hostd.core.identity import Member, acting_as
from hostd.protocol.guard import HttpPolicy
from hostd.protocol.http import build_http_app
from hostd.protocol.server import build_server
from hostd.web.serve import team_dashboard
from starlette.testclient import TestClient

BASE_URL = "http://127.0.0.1:8765"
TOKENS = {
    "alice": "alice-dashboard-token-0123456789",
    "bob": "bob-dashboard-token-0123456789",
    "reader": "reader-dashboard-token-0123456789",
}
PLUGINS = ["memory", "deep-thinking", "tasks"]
READ_ONLY_TOOLS = {
    "tasks": ["list_tasks", "get_task", "get_task_stats", "list_task_activity"],
    "deep-thinking": [
        "list_sessions",
        "get_session",
        "visualize_session",
        "search_thoughts",
        "list_templates",
    ],
    "memory": ["list_memories", "read_memory", "search_memory", "get_memory_stats", "get_memory_versions"],
}
#: Stored content that would run script if the dashboard let it: each sets ``window.__pwned``.
XSS_TITLE = "<script>window.__pwned=1</script> 标题"
XSS_NOTE = '<img src=x onerror="window.__pwned=1"> [click](javascript:window.__pwned=1)'
XSS_THOUGHT = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
XSS_MERMAID = '"]--> X["<img src=x onerror=window.__pwned=3>"] click X call alert()'
LONG_URI_OUT = "project://a-rather-long-neighbour-uri/that-does-not-fit"
LONG_URI_IN = "project://another-long-neighbour/linking-here"
LONG_CHINESE = "这是一个很长的中文任务标题，用来检查窄屏幕上的换行是否正常，" * 3


def write_tokens(folder: Path) -> Path:
    path = folder / "tokens.yaml"
    path.write_text(
        f"alice: {TOKENS['alice']}\nbob: {TOKENS['bob']}\n"
        f"reader: {{token: {TOKENS['reader']}, profile: reader}}\n",
        encoding="utf-8",
    )
    return path


def dashboard_host(data_dir: Path, storage: Mapping[str, Any] | None = None, language: str = "en") -> Host:
    """Every page's plugin, profile ``default`` (everything) and ``reader`` (reading tools only)."""
    raw = {
        "language": language,
        "profiles": {
            "default": {"plugins": PLUGINS},
            "reader": {
                "plugins": PLUGINS,
                "tools": {name: {"include": tools} for name, tools in READ_ONLY_TOOLS.items()},
            },
        },
        **(dict(storage) if storage else {}),
    }
    host = Host(config_from_mapping(raw, "default", data_dir=data_dir))
    if storage:
        host.prepare_team_databases(migrate=True)
    host.startup()
    return host


def dashboard_app(host: Host, tokens: Path, secret_env: str | None = None) -> Any:
    """The HTTP transport's app with the dashboard at ``/ui`` (``transport.dashboard: true``)."""
    transport = TransportConfig(
        type="http", tokens_file=str(tokens), dashboard=True, state_secret_env=secret_env
    )
    policy = HttpPolicy(transport, host.language, known_profiles=host.loaded.config.profiles)
    return build_http_app(
        build_server(host, transport), policy, None, team_dashboard(host, transport, policy)
    )


async def call_as(host: Host, member: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call as ``member`` (what their token would make it); the envelope must be a success."""
    with acting_as(Member(member)):
        envelope, failed = await host.call(tool, arguments)
    answer = dict(envelope)
    assert not failed, answer
    assert answer.get("status") == "success", answer
    return answer


async def seed(host: Host) -> None:
    """Tasks with dependencies and a failed blocker, a session with a branch, memories, payloads."""
    create = "create_task"
    await call_as(
        host,
        "alice",
        create,
        task_id="t-api",
        title="Build the API 接口",
        priority="P0",
        labels=["backend"],
        description="REST endpoints for **orders**.",
        acceptance="- curl returns 200\n- 中文验收：接口文档齐全",
    )
    await call_as(
        host, "alice", create, task_id="t-db", title="Database schema", priority="P1", labels=["backend"]
    )
    await call_as(
        host, "bob", create, task_id="t-ui", title="Order page", labels=["frontend"], depends_on=["t-api"]
    )
    await call_as(host, "bob", create, task_id="t-deploy", title="Deploy to staging", depends_on=["t-db"])
    await call_as(
        host, "alice", create, task_id="t-xss", title=XSS_TITLE, description=XSS_NOTE, labels=["安全"]
    )
    await call_as(host, "alice", create, task_id="t-long", title=LONG_CHINESE[:200], priority="P2")
    await call_as(host, "alice", "update_task", task_id="t-xss", append_note=XSS_NOTE)
    await call_as(host, "bob", "update_task_status", task_id="t-db", new_status="in_progress")
    await call_as(host, "bob", "update_task_status", task_id="t-db", new_status="failed")
    await call_as(host, "alice", "update_task_status", task_id="t-api", new_status="in_progress")
    await call_as(
        host, "alice", "split_task", task_id="t-ui", subtasks=[{"title": "Form"}, {"title": "List"}]
    )
    await call_as(host, "bob", create, task_id="t-done", title="Write the README")
    await call_as(host, "bob", "update_task_status", task_id="t-done", new_status="in_progress")
    await call_as(host, "bob", "update_task_status", task_id="t-done", new_status="completed")

    think = "sequential_thinking"
    base = {"session_id": "plan", "totalThoughts": 4, "nextThoughtNeeded": True}
    await call_as(
        host, "bob", think, thought="Which database? 先比较 PostgreSQL 和 SQLite。", thoughtNumber=1, **base
    )
    await call_as(host, "bob", think, thought="PostgreSQL for the team.", thoughtNumber=2, **base)
    await call_as(
        host,
        "alice",
        think,
        thought="Try SQLite first (另一条路).",
        thoughtNumber=3,
        branchFromThought=2,
        branchId="sqlite-first",
        **base,
    )
    await call_as(
        host,
        "alice",
        think,
        thought="Revise: PostgreSQL only when shared.",
        thoughtNumber=3,
        isRevision=True,
        revisesThought=2,
        **base,
    )
    await call_as(
        host, "bob", think, thought=XSS_THOUGHT, thoughtNumber=4, **{**base, "nextThoughtNeeded": False}
    )
    await call_as(
        host,
        "bob",
        think,
        thought=XSS_MERMAID,
        thoughtNumber=5,
        session_id="other",
        totalThoughts=1,
        nextThoughtNeeded=False,
    )

    await call_as(host, "alice", "link_task_session", task_id="t-api", session_id="plan")
    await call_as(
        host, "alice", "create_memory", uri="project://dashboard", content="The dashboard 仪表盘 plan."
    )
    # Versions whose last line has no newline (the diff's marker), a rollback, and links both ways
    # with long URIs (the graph at phone width).
    await call_as(host, "bob", "update_memory", uri="project://dashboard", content="仪表盘计划，第二版")
    await call_as(host, "alice", "rollback_memory", uri="project://dashboard", version=1)
    for uri in (LONG_URI_OUT, LONG_URI_IN):
        await call_as(host, "alice", "create_memory", uri=uri, content="相关 related")
    await call_as(
        host, "alice", "link_memories", from_uri="project://dashboard", to_uri=LONG_URI_OUT, relation="依赖"
    )
    await call_as(
        host, "bob", "link_memories", from_uri=LONG_URI_IN, to_uri="project://dashboard", relation="refines"
    )
    # A session from a built-in template, and a deleted one (the restore page lists it).
    await call_as(
        host, "alice", "create_session", name="根因 RCA", session_id="rca", template_id="root_cause_analysis"
    )
    await call_as(host, "bob", "create_session", name="旧的会话", session_id="old-plan")
    await call_as(host, "bob", "delete_session", session_id="old-plan")


# --- driving the dashboard over ASGI -----------------------------------------------------------


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def form_post(client: TestClient | httpx.Client, path: str, fields: Mapping[str, str]) -> httpx.Response:
    return client.post(
        path,
        content=urllib.parse.urlencode(dict(fields)),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )


def sign_in(client: TestClient | httpx.Client, member: str) -> None:
    form = client.get("/ui/signin")
    answer = form_post(
        client, "/ui/signin", {"csrf": csrf_of(form.text), "token": TOKENS[member], "next": "/ui/"}
    )
    assert answer.status_code == 303, answer.text


def member_client(app: Any, member: str) -> TestClient:
    client = TestClient(app, base_url=BASE_URL, follow_redirects=False)
    sign_in(client, member)
    return client
