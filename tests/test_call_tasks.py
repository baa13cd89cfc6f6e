"""Long calls as tasks (issue 34): the tasks extension (``io.modelcontextprotocol/tasks``,
2026-07-28) on real ``hostd serve`` processes, with the Python SDK client
(``call_tasks_support.TasksClient``: the SDK's ``ClientExtension`` declaring the extension and
claiming the ``resultType: "task"`` answer).

- stdio: ``import_memories`` and ``export_memories`` answer a task at once; polled, it ends with
  the result the plain call gives; a client that does not declare the extension (or speaks the
  2025-11-25 handshake) gets today's plain answer; ``server/discover`` advertises the extension,
  ``initialize`` does not.
- stateless HTTP, two replicas sharing one data folder (the tasks in its SQLite file): a task made
  on one replica is polled and cancelled on the other. ``read_wechat_articles`` shows its progress
  as the task's ``statusMessage``; cancelled while a page hangs, it ends ``cancelled`` long before
  the page would have answered, and what it wrote is whole (the article read before, nothing
  else). Another member's task id is unknown to ``tasks/get`` and ``tasks/cancel`` (-32602), and
  their cancel does not stop it.
- the same two replicas over PostgreSQL (``storage``): the task's state is in the team database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from call_tasks_support import IDENTIFIER, TasksClient, cancel_task, get_task, start_task, wait_for_end
from hostd_testing import HttpServer, envelope_of, served_client, write_config
from hostd_testing.raw_stdio import RawStdioServer, raw_stdio_server
from mcp.shared.exceptions import MCPError
from wechat_testlib import ArticleServer, plugin_settings

pytestmark = pytest.mark.anyio

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
MODERN = "2026-07-28"


def _without_timing(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope without what differs between two runs of the same call."""
    copy: dict[str, Any] = json.loads(json.dumps(envelope))
    copy["metadata"].pop("execution_time_ms", None)
    document = copy.get("document")
    if isinstance(document, dict):
        document.pop("exported_at", None)
    return copy


def _config(
    tmp_path: Path, served: list[str], *, transport: dict[str, Any] | None = None, **extra: Any
) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    profile: dict[str, Any] = {"plugins": served}
    if transport is not None:
        tokens = tmp_path / "tokens.yaml"
        tokens.write_text(f"alice: {TOKENS['alice']}\nbob: {TOKENS['bob']}\n", encoding="utf-8")
        profile["transport"] = {**transport, "tokens_file": str(tokens)}
    config = {"profiles": {"default": profile}, "allowed_roots": [str(notes)], "language": "en", **extra}
    return write_config(tmp_path, config=config)


MEMORIES = {
    "format": "hostd-memory-export",
    "version": 3,
    "memories": [
        {"uri": f"notes://item-{n}", "content": f"memory number {n}", "tags": ["bulk"]} for n in range(40)
    ],
}


async def test_stdio_import_and_export_are_tasks_with_the_plain_calls_result(tmp_path: Path) -> None:
    config = _config(tmp_path, ["memory"])
    async with served_client(config, mode=MODERN, extensions=[TasksClient()]) as client:
        task = await start_task(client, "import_memories", {"data": MEMORIES})
        assert task.status == "working"
        assert task.ttl_ms == 3_600_000
        assert task.poll_interval_ms == 500
        assert len(task.task_id) >= 22  # 128 random bits
        state = await wait_for_end(client.session, task.task_id)
        assert state.status == "completed"
        assert state.error is None
        imported = envelope_of(types.CallToolResult.model_validate(state.result))
        assert imported["status"] == "success", imported
        assert imported["created"] == 40, imported

        # The same call again, as a task and plainly: the same answer (both skip all 40 now).
        again = await client.call_tool("import_memories", {"data": MEMORIES})  # the claim polls it
        exported_task = await client.call_tool("export_memories", {})
    async with served_client(config, mode=MODERN) as plain_client:  # no extension declared
        plain = await plain_client.call_tool("import_memories", {"data": MEMORIES})
        exported_plain = await plain_client.call_tool("export_memories", {})
    assert _without_timing(envelope_of(again)) == _without_timing(envelope_of(plain))
    assert _without_timing(envelope_of(exported_task)) == _without_timing(envelope_of(exported_plain))
    assert envelope_of(exported_plain)["count"] == 20  # one page


async def test_quick_tools_and_clients_without_the_extension_answer_plainly(tmp_path: Path) -> None:
    config = _config(tmp_path, ["memory"])
    async with served_client(config, mode=MODERN, extensions=[TasksClient()]) as client:
        quick = await client.session.call_tool("list_memories", {}, allow_claimed=True)
        assert isinstance(quick, types.CallToolResult)  # not a long call: no task
    async with served_client(config, mode="legacy", extensions=[TasksClient()]) as client:
        legacy = await client.session.call_tool("export_memories", {}, allow_claimed=True)
        assert isinstance(legacy, types.CallToolResult)  # 2025-11-25: the extension is not served
        with pytest.raises(MCPError) as refused:
            await get_task(client.session, "anything")
        assert refused.value.error.code == types.METHOD_NOT_FOUND


def _ask(server: RawStdioServer, message: dict[str, Any]) -> dict[str, Any]:
    server.send(message)
    return next(answer for answer in server.read_until({message["id"]}) if answer.get("id") == message["id"])


def test_discover_advertises_the_extension_and_initialize_does_not(tmp_path: Path) -> None:
    config = _config(tmp_path, ["memory"])
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {IDENTIFIER: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    with raw_stdio_server(config) as server:
        discovered = _ask(
            server, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
        )
        # Beside the views' extension (MCP Apps: memory has views).
        extensions = discovered["result"]["capabilities"]["extensions"]
        assert extensions == {IDENTIFIER: {}, "io.modelcontextprotocol/ui": {}}
        missing = _ask(
            server,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tasks/get",
                "params": {
                    "taskId": "x",
                    "_meta": {**meta, "io.modelcontextprotocol/clientCapabilities": {}},
                },
            },
        )
        assert missing["error"]["code"] == -32021
        assert missing["error"]["data"] == {"requiredCapabilities": {"extensions": {IDENTIFIER: {}}}}
    with raw_stdio_server(config) as server:
        initialized = _ask(
            server,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"extensions": {IDENTIFIER: {}}},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )
        assert "extensions" not in initialized["result"]["capabilities"]


@contextmanager
def two_replicas(config: Path) -> Iterator[tuple[HttpServer, HttpServer]]:
    with ExitStack() as stack:
        first = stack.enter_context(HttpServer.start(config))
        second = stack.enter_context(HttpServer.start(config))
        yield first, second


def _bearer(member: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[member]}"}


async def _cancel_mid_way_on_the_other_replica(
    first: HttpServer, second: HttpServer, articles: ArticleServer, out: Path
) -> None:
    """A task made on ``first`` followed and cancelled on ``second``; the caller checks ``out``
    with :func:`_only_the_first_article_written` once both replicas have stopped."""
    urls = [
        articles.url("/s/article/1?title=First"),
        articles.url("/s/hang?seconds=60"),
    ]
    # Both fetched at once: the first answers, the second hangs.
    arguments = {"urls": urls, "concurrency": 2, "output_dir": str(out), "fetch_strategy": "http"}
    async with (
        first.client(mode=MODERN, headers=_bearer("alice"), extensions=[TasksClient()]) as alice_a,
        second.client(mode=MODERN, headers=_bearer("alice"), extensions=[TasksClient()]) as alice_b,
        second.client(mode=MODERN, headers=_bearer("bob"), extensions=[TasksClient()]) as bob,
    ):
        task = await start_task(alice_a, "read_wechat_articles", arguments)
        # Progress, seen from the other replica: the first article is read, the second hangs.
        with anyio.fail_after(60):
            while True:
                state = await get_task(alice_b.session, task.task_id)
                assert state.status == "working", state
                if state.status_message and state.status_message.startswith("1/2"):
                    break
                await anyio.sleep(0.1)
        assert state.status_message.startswith("1/2 ok: First"), state.status_message

        # Bob knows nothing of it: neither get nor cancel finds it.
        for ask in (get_task, cancel_task):
            with pytest.raises(MCPError) as unknown:
                await ask(bob.session, task.task_id)
            assert unknown.value.error.code == types.INVALID_PARAMS
            assert "Failed to retrieve task" in unknown.value.error.message
        assert (await get_task(alice_b.session, task.task_id)).status == "working"

        assert await cancel_task(alice_b.session, task.task_id) == {"resultType": "complete"}
        started = anyio.current_time()
        ended = await wait_for_end(alice_a.session, task.task_id, timeout=30)
        assert ended.status == "cancelled", ended
        assert anyio.current_time() - started < 20  # not the 60 s the page hangs
        assert ended.result is None


def _only_the_first_article_written(out: Path) -> None:
    """Nothing half-written: the first article's file, whole; nothing of the others, no temp file."""
    written = sorted(path.name for path in out.rglob("*") if path.is_file())
    assert len(written) == 1, written
    assert written[0].endswith(".md"), written
    assert "First" in (out / written[0]).read_text(encoding="utf-8")


async def test_two_stateless_replicas_share_tasks_in_the_data_folder(tmp_path: Path) -> None:
    with ArticleServer() as articles:
        config = _config(
            tmp_path,
            ["wechat", "memory"],
            transport={"type": "http", "stateless": True},
            plugins=plugin_settings(articles),
        )
        out = tmp_path / "notes" / "out"
        # The same two replicas serve both tasks (each pair of starts costs seconds).
        with two_replicas(config) as (first, second):
            await _cancel_mid_way_on_the_other_replica(first, second, articles, out)
            assert (tmp_path / "data" / "hostd" / "call_tasks.db").is_file()

            # A task that completes: made on one replica, its result read on the other.
            async with (
                first.client(mode=MODERN, headers=_bearer("alice"), extensions=[TasksClient()]) as on_a,
                second.client(mode=MODERN, headers=_bearer("alice"), extensions=[TasksClient()]) as on_b,
                second.client(mode=MODERN, headers=_bearer("alice")) as plain,
            ):
                task = await start_task(on_a, "import_memories", {"data": MEMORIES})
                state = await wait_for_end(on_b.session, task.task_id)
                assert state.status == "completed"
                assert envelope_of(types.CallToolResult.model_validate(state.result))["created"] == 40
                as_task = await on_b.call_tool("import_memories", {"data": MEMORIES})
                as_plain = await plain.call_tool("import_memories", {"data": MEMORIES})
                assert _without_timing(envelope_of(as_task)) == _without_timing(envelope_of(as_plain))
        _only_the_first_article_written(out)


async def test_two_stateless_replicas_share_tasks_in_the_team_database(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv("HOSTD_TEST_DATABASE_URL", postgres_url)
    with ArticleServer() as articles:
        config = _config(
            tmp_path,
            ["wechat", "memory"],
            transport={"type": "http", "stateless": True},
            plugins=plugin_settings(articles),
            storage={"url_env": "HOSTD_TEST_DATABASE_URL"},
        )
        out = tmp_path / "notes" / "out"
        with two_replicas(config) as (first, second):
            await _cancel_mid_way_on_the_other_replica(first, second, articles, out)
        _only_the_first_article_written(out)
        assert not (tmp_path / "data" / "hostd" / "call_tasks.db").exists()


def _modern(request_id: int, method: str, params: dict[str, Any], *, declared: bool = True) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {IDENTIFIER: {}}} if declared else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}


def test_notifications_tasks_follow_a_task_on_a_listen_stream(tmp_path: Path) -> None:
    config = _config(tmp_path, ["memory"])
    with raw_stdio_server(config) as server:
        created = _ask(
            server, _modern(1, "tools/call", {"name": "import_memories", "arguments": {"data": MEMORIES}})
        )
        task = created["result"]
        assert task["resultType"] == "task"
        assert task["status"] == "working"

        refused = _ask(
            server,
            _modern(
                2, "subscriptions/listen", {"notifications": {"taskIds": [task["taskId"]]}}, declared=False
            ),
        )
        assert refused["error"]["code"] == -32021

        server.send(
            _modern(3, "subscriptions/listen", {"notifications": {"taskIds": [task["taskId"], "not-a-task"]}})
        )
        ack = server.read_message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [task["taskId"]]}  # only the caller's own
        subscription = ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["status"] == "working":
            message = server.read_message()
            assert message["method"] == "notifications/tasks", message
            assert message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription
            seen.append(message["params"])
        final = seen[-1]
        assert final["status"] == "completed"
        assert final["taskId"] == task["taskId"]
        polled = _ask(server, _modern(4, "tasks/get", {"taskId": task["taskId"]}))["result"]
        assert {k: v for k, v in final.items() if k != "_meta"} == {
            k: v for k, v in polled.items() if k not in ("_meta", "resultType")
        }
        assert envelope_of(types.CallToolResult.model_validate(final["result"]))["created"] == 40


async def test_stdio_cancel_stops_the_read_at_its_next_safe_point(tmp_path: Path) -> None:
    """In one process (stdio) the task is in memory and ``tasks/cancel`` cancels the call at once."""
    out = tmp_path / "notes" / "out"
    with ArticleServer() as articles:
        config = _config(tmp_path, ["wechat"], plugins=plugin_settings(articles))
        urls = [articles.url("/s/article/1?title=First"), articles.url("/s/hang?seconds=60")]
        arguments = {"urls": urls, "concurrency": 2, "output_dir": str(out), "fetch_strategy": "http"}
        async with served_client(config, mode=MODERN, extensions=[TasksClient()]) as client:
            task = await start_task(client, "read_wechat_articles", arguments)
            with anyio.fail_after(60):
                while not (await get_task(client.session, task.task_id)).status_message:
                    await anyio.sleep(0.1)
            state = await get_task(client.session, task.task_id)
            assert state.status_message is not None, state
            assert state.status_message.startswith("1/2 ok: "), state
            assert await cancel_task(client.session, task.task_id) == {"resultType": "complete"}
            ended = await wait_for_end(client.session, task.task_id, timeout=20)
            assert ended.status == "cancelled"
            assert ended.status_message == "Cancelled at the client's request."
            # Cancelling an ended task is acknowledged and changes nothing.
            assert await cancel_task(client.session, task.task_id) == {"resultType": "complete"}
            assert (await get_task(client.session, task.task_id)).status == "cancelled"
    written = sorted(path.name for path in out.rglob("*") if path.is_file())
    assert len(written) == 1, written
    assert written[0].endswith(".md"), written
