"""Destructive calls ask the user first, through the client's elicitation, on real servers.

Four calls ask: ``delete_memory`` with ``force``, ``import_memories`` that overwrites existing
memories, ``delete_task`` that drops other tasks' dependencies, and ``delete_session``. A real
``hostd serve`` is driven by the Python SDK's client, whose elicitation callback answers accept,
decline and cancel in turn: over stdio (before 2026-07-28: ``elicitation/create`` requests on
the call's stream) and over stateless HTTP (2026-07-28: the question rides in an
``input_required`` result and the call comes back with the answer). What each call left behind
is read afterwards from the store itself, by a host of its own over the same data folder.

Accept acts (``metadata.confirmation`` says the user accepted); decline and cancel do nothing
and say so in a success envelope without the tool's fields. A client without elicitation, or
one that cannot be asked (the 2025 protocol on a stateless server: no session to ask on), gets
exactly today's answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import mcp_types as types
import pytest
from dirty_equals import IsFloat, IsPartialDict, IsStr
from hostd_testing import HttpServer, envelope_of, served_client, write_config
from hostd_testing.calls import call, ok
from hostd_testing.hosts import make_host
from mcp import Client

pytestmark = pytest.mark.anyio

PLUGINS = ["memory", "tasks", "deep-thinking"]
Answer = Literal["accept", "decline", "cancel"]
CONFIG: dict[str, Any] = {"language": "en"}
#: What a confirmation's answer becomes in ``metadata.confirmation``.
RECORDED = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
#: How the answer of a call that was not confirmed begins.
NOT_DONE = {
    "decline": "Nothing was done: the user declined. ",
    "cancel": "Nothing was done: the user dismissed the question without answering. ",
}


class Person:
    """The client's elicitation callback: the answers given in order, each question recorded."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        assert params.requested_schema["properties"] == {}  # a confirmation asks for no field
        self.asked.append(params.message)
        action = self.answers.pop(0)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)


async def prepare(client: Client, tag: str) -> None:
    """A memory to purge, one to import over, a task others wait on, and a thinking session."""
    await ok(client, "create_memory", uri=f"note://gone-{tag}", content="purge me")
    await ok(client, "create_memory", uri=f"imp://{tag}", content="old text")
    await ok(client, "create_task", title=f"base {tag}", task_id=f"base-{tag}")
    await ok(client, "create_task", title=f"waits {tag}", task_id=f"waits-{tag}", depends_on=[f"base-{tag}"])
    await ok(client, "create_session", name=f"session {tag}", session_id=f"s-{tag}")


def destructive_calls(tag: str) -> dict[str, dict[str, Any]]:
    """The four calls that ask, in the order they are made."""
    document = {
        "format": "hostd-memory-export",
        "version": 3,
        "memories": [{"uri": f"imp://{tag}", "content": "new text", "priority": 5}],
    }
    return {
        "delete_memory": {"uri": f"note://gone-{tag}", "force": True},
        "import_memories": {"data": document, "strategy": "overwrite"},
        "delete_task": {"task_id": f"base-{tag}", "drop_dependencies": True},
        "delete_session": {"session_id": f"s-{tag}"},
    }


def questions(tag: str) -> list[str]:
    """What the user is asked, one question per call."""
    return [
        f"Delete the memory note://gone-{tag} for good, with all its versions and 0 alias(es)? "
        "This cannot be undone.",
        f"Replace 1 existing memory(ies) with the imported content: imp://{tag}? "
        "Their current content stays in their version history.",
        f"Delete task base-{tag} 'base {tag}' and drop it from the dependencies of 1 task: "
        f"waits-{tag} 'waits {tag}'?",
        f"Delete the thinking session 's-{tag}'? A backup is kept: restore_session brings it back.",
    ]


def acted(tag: str, metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The whole answer of each call that acted, as the tools answer it (``metadata`` beside)."""
    return {
        "delete_memory": {
            "status": "success",
            "message": f"Removed note://gone-{tag} for good, with 1 version(s) and 0 alias(es).",
            "uri": f"note://gone-{tag}",
            "action": "removed",
            "target_uri": None,
            "memory": None,
            "removed_versions": 1,
            "removed_aliases": [],
            "metadata": metadata,
        },
        "import_memories": {
            "status": "success",
            "message": "Imported: 0 created, 0 skipped, 1 overwritten, 0 merged, 0 unchanged, "
            "0 link(s) added, 0 error(s).",
            "strategy": "overwrite",
            "format_version": 3,
            "created": 0,
            "skipped": 0,
            "overwritten": 1,
            "merged": 0,
            "unchanged": 0,
            "links_added": 0,
            "source": "hostd-memory-export",
            "input_path": None,
            "errors": [],
            "metadata": metadata,
        },
        "delete_task": {
            "status": "success",
            "message": f"Deleted task base-{tag} 'base {tag}'. It was dropped from the dependencies "
            f"of: waits-{tag}.",
            "task": IsPartialDict(task_id=f"base-{tag}", title=f"base {tag}", status="pending"),
            "dropped_from": [f"waits-{tag}"],
            "metadata": metadata,
        },
        "delete_session": {
            "status": "success",
            "message": f"Deleted session 's-{tag}' (backup kept); restore_session(session_id='s-{tag}') "
            "brings it back.",
            "session_id": f"s-{tag}",
            "deleted": True,
            "backup": IsStr(min_length=1),
            "backup_id": IsStr(min_length=1),
            "restore_call": {"session_id": f"s-{tag}", "backup": IsStr(min_length=1)},
            "metadata": metadata,
        },
    }


def not_done(tag: str, answer: Answer) -> dict[str, dict[str, Any]]:
    """The whole answer of each call the user did not confirm: the message and metadata only."""
    kept = {
        "delete_memory": f"note://gone-{tag} is kept as it was.",
        "import_memories": "Nothing was imported; the 1 existing memory(ies) are unchanged.",
        "delete_task": f"Task base-{tag} and the dependencies on it are kept.",
        "delete_session": f"Session 's-{tag}' is kept as it was.",
    }
    metadata = {"execution_time_ms": IsFloat(ge=0), "confirmation": RECORDED[answer]}
    return {
        tool: {"status": "success", "message": NOT_DONE[answer] + text, "metadata": metadata}
        for tool, text in kept.items()
    }


async def run_calls(client: Client, tag: str) -> dict[str, dict[str, Any]]:
    """Prepare, then make the four calls; each call's envelope (never an error result)."""
    await prepare(client, tag)
    answers: dict[str, dict[str, Any]] = {}
    for tool, arguments in destructive_calls(tag).items():
        result = await client.call_tool(tool, arguments)
        assert result.is_error is False, result
        answers[tool] = envelope_of(result)
    return answers


async def answer_in_turn(client: Client, person: Person, prefix: str) -> dict[str, str]:
    """For each answer, a fresh set of records and the four calls answered so; the tag of each."""
    tags: dict[str, str] = {}
    for answer in ("accept", "decline", "cancel"):
        tag = f"{prefix}-{answer}"
        tags[answer] = tag
        person.answers = [answer] * 4
        person.asked = []
        with anyio.fail_after(120):
            answers = await run_calls(client, tag)
        assert person.asked == questions(tag)
        assert person.answers == []
        if answer == "accept":
            metadata = {"execution_time_ms": IsFloat(ge=0), "confirmation": "accepted"}
            assert answers == acted(tag, metadata)
        else:
            assert answers == not_done(tag, answer)
    return tags


async def without_asking(client: Client, tag: str) -> None:
    """A client that cannot be asked: today's answers exactly (no ``confirmation`` in metadata)."""
    with anyio.fail_after(120):
        answers = await run_calls(client, tag)
    assert answers == acted(tag, {"execution_time_ms": IsFloat(ge=0)})


async def in_the_store(data_dir: Path, tag: str) -> dict[str, bool]:
    """What the store holds of ``tag``'s records, read by a host of its own: whether each is still
    there as it was (the memory, the imported-over memory's old text, the task and the dependency
    on it, the session)."""
    with make_host(PLUGINS, data_dir=data_dir, config=CONFIG) as host:
        purged, _ = await host.call("read_memory", {"uri": f"note://gone-{tag}"})
        imported = await host.ok("read_memory", {"uri": f"imp://{tag}"})
        base = await host.ok("get_task", {"task_id": f"base-{tag}"})
        waits = await host.ok("get_task", {"task_id": f"waits-{tag}"})
        session, _ = await host.call("get_session", {"session_id": f"s-{tag}"})
    return {
        "delete_memory": purged["status"] == "success",
        "import_memories": imported["content"] == "old text",
        "delete_task": base["deleted_at"] is None and waits["task"]["depends_on"] == [f"base-{tag}"],
        "delete_session": session["status"] == "success",
    }


async def check_store(data_dir: Path, tags: dict[str, str]) -> None:
    for answer, tag in tags.items():
        kept = await in_the_store(data_dir, tag)
        expected = answer in ("decline", "cancel")
        assert kept == dict.fromkeys(kept, expected), (answer, kept)


async def test_over_stdio_each_answer_and_a_client_without_elicitation(tmp_path: Path) -> None:
    config = write_config(tmp_path, PLUGINS, config=CONFIG)
    data_dir = tmp_path / "data"
    person = Person()
    async with served_client(config, cwd=tmp_path, elicitation_callback=person) as client:
        tags = await answer_in_turn(client, person, "stdio")
    async with served_client(config, cwd=tmp_path) as client:
        await without_asking(client, "stdio-plain")
    await check_store(data_dir, tags)
    gone = await in_the_store(data_dir, "stdio-plain")
    assert gone == dict.fromkeys(gone, False)


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, Path]]:
    """One stateless HTTP server for the module: every client asks it on its own requests."""
    folder = tmp_path_factory.mktemp("confirm-http")
    config = write_config(
        folder,
        PLUGINS,
        config={**CONFIG, "profiles": {"default": {"plugins": PLUGINS, "transport": {"stateless": True}}}},
    )
    with HttpServer.start(config, cwd=folder) as server:
        yield server, folder / "data"


async def test_stateless_http_asks_in_input_required_rounds(stateless: tuple[HttpServer, Path]) -> None:
    server, data_dir = stateless
    person = Person()
    async with server.client(mode="2026-07-28", elicitation_callback=person) as client:
        tags = await answer_in_turn(client, person, "http")
    await check_store(data_dir, tags)


async def test_stateless_http_clients_that_cannot_be_asked_get_todays_answers(
    stateless: tuple[HttpServer, Path],
) -> None:
    server, data_dir = stateless
    async with server.client(mode="2026-07-28") as client:
        await without_asking(client, "http-plain")
    # The 2025 protocol on a stateless server has no session to ask on, whatever the client offers.
    person = Person()
    async with server.client(mode="legacy", elicitation_callback=person) as client:
        await without_asking(client, "http-legacy")
    assert person.asked == []
    for tag in ("http-plain", "http-legacy"):
        gone = await in_the_store(data_dir, tag)
        assert gone == dict.fromkeys(gone, False)


def test_hostd_call_acts_as_typed(tmp_path: Path) -> None:
    """``hostd call`` has no client to ask: the command typed at the terminal is the user's
    decision, so the call acts and answers as it always has (no ``--yes`` needed)."""

    def hostd_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "hostd", "call", tool, "--json", json.dumps(arguments)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HOSTD_CONFIG": str(config)},
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        return cast(dict[str, Any], json.loads(done.stdout))

    config = write_config(tmp_path, PLUGINS, config=CONFIG)
    hostd_call("create_session", {"name": "terminal", "session_id": "s-cli"})
    deleted = hostd_call("delete_session", {"session_id": "s-cli"})
    assert deleted == acted("cli", {"execution_time_ms": IsFloat(ge=0)})["delete_session"]


async def test_a_stateful_http_session_asks_on_the_calls_own_stream(tmp_path: Path) -> None:
    """With a session (``stateless: false``, the default) a 2025-era client is asked with an
    ``elicitation/create`` request on the POST's own response stream."""
    config = write_config(tmp_path, ["deep-thinking"], config=CONFIG)
    person = Person()
    with HttpServer.start(config, cwd=tmp_path) as server:
        async with server.client(elicitation_callback=person) as client:
            with anyio.fail_after(120):
                await ok(client, "create_session", name="session http-sticky", session_id="s-http-sticky")
                person.answers = ["decline", "accept"]
                kept = await call(client, "delete_session", session_id="s-http-sticky")
                deleted = await call(client, "delete_session", session_id="s-http-sticky")
    assert kept == not_done("http-sticky", "decline")["delete_session"]
    accepted = {"execution_time_ms": IsFloat(ge=0), "confirmation": "accepted"}
    assert deleted == acted("http-sticky", accepted)["delete_session"]
    assert person.asked == [questions("http-sticky")[3]] * 2
