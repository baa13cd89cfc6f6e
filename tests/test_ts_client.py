"""The official TypeScript SDK client (``@modelcontextprotocol/sdk``, npm) lists and reads
resources, completes arguments and gets prompts from a real ``hostd serve``: over stdio (the client
spawns the server, as an IDE does) and over stateless HTTP behind nginx running
``deploy/nginx.conf`` in front of three replicas (any replica answers any request, so one client's
requests land on several).

Era: the TypeScript SDK's client speaks the initialize handshake only (its newest protocol version
is 2025-11-25); hostd's 2026-07-28 era is covered by the Python SDK client
(``test_resources.py``). ``check_what_the_client_saw`` fails the day a pinned SDK offers it, so
the era gets added here.

What the client does is in ``ts_sdk_client.cjs``: it writes a memory, two tasks and a thinking
session with the tools (the SDK checks each ``structuredContent`` against the output schema),
then reads them back as resources; the ``test://`` resources and ``test_*`` prompts come from the
test-only ``conformance-test`` plugin. Last it subscribes to a memory and a task
(``resources/subscribe``): over stdio it hears of their changes and not of an unrelated task's, and
nothing of the memory after unsubscribing; the stateless servers behind nginx refuse it (-32600).
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from conformance_plugin import EMBEDDED_TEXT, PNG
from conformance_support import (
    TS_SDK,
    install_npm_packages,
    install_test_plugin,
    run_json,
    served_plugins,
)
from team_cluster import NGINX_INSTALL, Balancer, Replica, find_nginx, free_port

pytestmark = pytest.mark.npm  # the SDK and Node.js 22 come from npm: `nox -s external`

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "ts_sdk_client.cjs"
TOKEN = "ts-client-token-0123456789"
HANDSHAKE_ERA = "2025-11-25"
MODERN_ERA = "2026-07-28"


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return install_npm_packages()


def _config(folder: Path, transport: dict[str, Any]) -> Path:
    config = folder / "hostd.yaml"
    raw = {
        "data_dir": str(folder / "data"),
        "language": "en",
        "profiles": {"default": {"plugins": served_plugins(), "transport": transport}},
    }
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def balancer_url(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nginx in front of three stateless replicas sharing one data folder (SQLite in WAL mode and
    the thinking sessions' files are safe across processes)."""
    nginx = find_nginx()
    if nginx is None:
        if os.environ.get("HOSTD_REQUIRE_NGINX") == "1":
            pytest.fail(f"nginx is required (HOSTD_REQUIRE_NGINX=1) but not installed: {NGINX_INSTALL}")
        pytest.skip(f"nginx is not installed: {NGINX_INSTALL}")
    folder = tmp_path_factory.mktemp("ts-cluster")
    (folder / "tokens.yaml").write_text(yaml.safe_dump({"alice": TOKEN}), encoding="utf-8")
    transport = {"type": "http", "stateless": True, "tokens_file": str(folder / "tokens.yaml")}
    config = _config(folder, transport)
    env = {**install_test_plugin(folder / "site"), "HOSTD_CACHE_DIR": str(folder / "cache")}
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(3)]
    balancer = Balancer(nginx, folder / "nginx", free_port())
    try:
        with ThreadPoolExecutor(len(replicas)) as pool:  # start together: each start waits on /readyz
            list(pool.map(lambda replica: replica.start(), replicas))
        balancer.start([replica.port for replica in replicas])
        yield balancer.url
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()


def _texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [(m["role"], m["content"]) for m in messages]


def check_what_the_client_saw(out: dict[str, Any]) -> None:
    assert out["protocolVersion"] == HANDSHAKE_ERA
    # When a pinned SDK's client offers 2026-07-28, run these tests in that era too.
    assert out["sdkProtocolVersions"][0] == HANDSHAKE_ERA, (TS_SDK, out["sdkProtocolVersions"])
    assert MODERN_ERA not in out["sdkProtocolVersions"], (TS_SDK, out["sdkProtocolVersions"])
    assert out["server"]["name"] == "hostd"
    assert {"resources", "prompts", "completions", "tools"} <= set(out["capabilities"])
    assert [(c["name"], c["isError"], c["status"]) for c in out["calls"]] == [
        ("create_memory", False, "success"),
        ("create_task", False, "success"),
        ("create_task", False, "success"),
        ("sequential_thinking", False, "success"),
    ]
    links = [[(block["type"], block["uri"]) for block in c["content"][1:]] for c in out["calls"]]
    assert links == [
        [("resource_link", "memory://ops/deploy/steps")],
        [("resource_link", "task://ts-1")],
        [("resource_link", "task://ts-2")],
        [("resource_link", "thinking://ts-plan")],
    ]

    assert [r["uri"] for r in out["resources"]] == [
        "test://static-text",
        "test://static-binary",
        "memory://ops/deploy/steps",
        "thinking://ts-plan",
        "task://ts-1",
        "task://ts-2",
    ]
    assert all(r["name"] and r["mimeType"] for r in out["resources"])
    assert [t["uriTemplate"] for t in out["templates"]] == [
        "test://template/{id}/data",
        "test://{name}",
        "memory://{domain}/{+path}",
        "memory-tag://{tag}",
        "memory-graph://{domain}/{+path}",
        "thinking://{session_id}",
        "task://{task_id}",
        "task-label://{label}",
    ]
    reads = out["reads"]
    memory = reads["memory://ops/deploy/steps"]
    assert len(memory) == 1
    assert memory[0]["mimeType"] == "text/markdown"
    assert memory[0]["text"].startswith(
        '---\nuri: "ops://deploy/steps"\npriority: 5\nstatus: "active"\ntags: ["ops"]'
    )
    assert memory[0]["text"].endswith("---\n\nRun the playbook.")
    task = reads["task://ts-1"][0]["text"]
    assert task.startswith("# ts-1: Ship the release\n\n- status: pending")
    assert "## History (1)" in task
    session = reads["thinking://ts-plan"][0]["text"]
    assert session.startswith("# ts-plan")
    assert "Ship first." in session
    assert reads["test://static-binary"] == [
        {"uri": "test://static-binary", "mimeType": "image/png", "blob": base64.b64encode(PNG).decode()}
    ]
    assert out["missing"]["code"] == -32002

    completions = {name: c["values"] for name, c in out["completions"].items()}
    assert completions == {
        "task_id": ["ts-2", "ts-1"],  # most recently changed first
        "memory": ["ops"],
        "session_id": ["ts-plan"],
        "arg1": ["paris", "park", "party"],
    }

    prompts = {p["name"]: p for p in out["prompts"]}
    assert {"test_prompt_with_arguments", "think_problem_solving", "think_decision_making"} <= set(prompts)
    assert all(p["description"] for p in out["prompts"])
    assert [(a["name"], a["required"]) for a in prompts["think_problem_solving"]["arguments"]] == [
        ("topic", True),
        ("session_id", False),
    ]
    got = out["gotPrompts"]
    think = got["think"]["messages"]
    assert len(think) == 1
    assert think[0]["role"] == "user"
    text = think[0]["content"]["text"]
    assert "session 'ts-plan'" in text
    assert text.endswith("Topic: Slow deploys")
    png = base64.b64encode(PNG).decode()
    assert _texts(got["image"]["messages"]) == [
        ("user", {"type": "image", "data": png, "mimeType": "image/png"}),
        ("user", {"type": "text", "text": "Please analyze the image above."}),
    ]
    assert _texts(got["embedded"]["messages"]) == [
        (
            "user",
            {
                "type": "resource",
                "resource": {"uri": "test://static-text", "mimeType": "text/plain", "text": EMBEDDED_TEXT},
            },
        ),
        ("user", {"type": "text", "text": "Please process the embedded resource above."}),
    ]
    assert out["unknownPrompt"]["code"] == -32602


def check_subscriptions(out: dict[str, Any], *, stateless: bool) -> None:
    """Over stdio the subscribed memory and task are announced and the unrelated task is not;
    after unsubscribing from the memory only the task is. A stateless server refuses to subscribe
    and says what works instead."""
    subscriptions = out["subscriptions"]
    if stateless:
        assert "subscribe" not in out["capabilities"]["resources"]
        refused = subscriptions["refused"]
        assert refused["code"] == -32600, refused
        assert "subscriptions/listen" in refused["message"], refused
        assert subscriptions["updates"] == []
        return
    assert out["capabilities"]["resources"]["subscribe"] is True
    assert subscriptions["refused"] is None
    assert sorted(subscriptions["subscribed"]) == ["memory://ops/deploy/steps", "task://ts-1"]
    assert subscriptions["afterUnsubscribe"] == ["task://ts-1"]


def test_over_stdio(node_modules: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, {"type": "stdio"})
    # The client hands its own environment to the server it spawns.
    env = {**install_test_plugin(tmp_path / "site"), "HOSTD_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "hostd", "serve", "--config", str(config)]
    out = run_json(["node", str(SCRIPT), "stdio", *command], cwd=tmp_path, env=env)
    check_what_the_client_saw(out)
    check_subscriptions(out, stateless=False)


def test_over_stateless_http_behind_nginx(node_modules: Path, balancer_url: str, tmp_path: Path) -> None:
    env = {"HOSTD_TEST_TOKEN": TOKEN}
    out = run_json(["node", str(SCRIPT), "http", balancer_url], cwd=tmp_path, env=env)
    check_what_the_client_saw(out)
    check_subscriptions(out, stateless=True)
