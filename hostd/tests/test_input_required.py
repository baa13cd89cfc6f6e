"""Roots and sampling on both protocol eras, in-process with the SDK's own client.

Before 2026-07-28 the host asks the client with requests of its own (``roots/list``,
``sampling/createMessage``); from 2026-07-28 on it may not, and asks inside the call's
result (``input_required``), the client calling again with the answers. A tool sees the same
thing either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import envelope_of, in_memory_client, prompt_text, root_for
from mcp.shared.exceptions import MCPError
from pydantic import Field

from hostd import ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]
MODERN = "2026-07-28"


class Answers(ToolOutput):
    texts: list[str | None]
    runs: int


class AskingPlugin:
    """Tools that sample in the ways plugins do: twice in a row, from a thread, at once."""

    def __init__(self) -> None:
        self.runs = 0

    async def ask_twice(
        self, ctx: ToolContext[None], topic: Annotated[str, Field(description="What to ask about")]
    ) -> Answers:
        """Ask the client's model two questions, the second built from the first answer."""
        self.runs += 1
        first = await ctx.sample(f"first: {topic}")
        second = await ctx.sample(f"second after {first.text}")
        return Answers(texts=[first.text, second.text], runs=self.runs)

    def ask_in_thread(
        self, ctx: ToolContext[None], topic: Annotated[str, Field(description="What to ask about")]
    ) -> Answers:
        """Ask from a sync tool's worker thread, as the wechat digest does."""
        self.runs += 1
        return Answers(texts=[ctx.sample_sync(f"thread: {topic}").text], runs=self.runs)

    async def ask_at_once(
        self, ctx: ToolContext[None], topic: Annotated[str, Field(description="What to ask about")]
    ) -> Answers:
        """Ask two questions concurrently (a task group ends with both unanswered)."""
        self.runs += 1
        texts: dict[int, str | None] = {}

        async def ask(number: int) -> None:
            texts[number] = (await ctx.sample(f"parallel {number}: {topic}")).text

        async with anyio.create_task_group() as group:
            group.start_soon(ask, 1)
            group.start_soon(ask, 2)
        return Answers(texts=[texts[1], texts[2]], runs=self.runs)

    def careless(self, ctx: ToolContext[None]) -> Answers:
        """Swallow every ``Exception`` around sampling, as careless plugin code might."""
        self.runs += 1
        try:
            text = ctx.sample_sync("careless").text
        except Exception:
            text = "swallowed"
        return Answers(texts=[text], runs=self.runs)

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        for tool in (self.ask_twice, self.ask_in_thread, self.ask_at_once, self.careless):
            register(tool, access="read")


def roots_callback(*paths: Path) -> Any:
    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[root_for(path) for path in paths])

    return list_roots


def sampling_callback(prompts: list[str]) -> Any:
    """The client's model: answers ``model says <prompt>`` and records each prompt it saw."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = prompt_text(params)
        prompts.append(prompt)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"model says {prompt}"), model="m"
        )

    return sample


async def roots_seen(data_dir: Path, probe: object, mode: str, **kwargs: Any) -> dict[str, Any]:
    async with in_memory_client(
        ["probe"], data_dir=data_dir, extra_plugins={"probe": probe}, mode=mode, **kwargs
    ) as client:
        return envelope_of(await client.call_tool("where", {}))


@pytest.mark.parametrize("mode", ERAS)
async def test_client_roots_apply_when_nothing_is_configured(
    tmp_path: Path, probe: object, mode: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    envelope = await roots_seen(
        tmp_path / "d", probe, mode, cwd=Path("/"), list_roots_callback=roots_callback(workspace)
    )
    assert envelope["roots"] == [str(workspace.resolve())]


@pytest.mark.parametrize("mode", ERAS)
async def test_client_roots_narrow_configured_roots(tmp_path: Path, probe: object, mode: str) -> None:
    configured, inner, elsewhere = tmp_path / "all", tmp_path / "all" / "project", tmp_path / "other"
    inner.mkdir(parents=True)
    elsewhere.mkdir()
    envelope = await roots_seen(
        tmp_path / "d",
        probe,
        mode,
        config={"allowed_roots": [str(configured)]},
        list_roots_callback=roots_callback(inner, elsewhere),
    )
    assert envelope["roots"] == [str(inner.resolve())]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_without_roots_gets_the_configured_or_working_folder(
    tmp_path: Path, probe: object, mode: str
) -> None:
    configured = tmp_path / "notes"
    configured.mkdir()
    with anyio.fail_after(10):  # nothing to ask: no round trip, no hang
        assert (await roots_seen(tmp_path / "d", probe, mode, config={"allowed_roots": [str(configured)]}))[
            "roots"
        ] == [str(configured.resolve())]
        assert (await roots_seen(tmp_path / "d", probe, mode, cwd=tmp_path))["roots"] == [
            str(tmp_path.resolve())
        ]
        refused = await roots_seen(tmp_path / "d", probe, mode, cwd=Path("/"))
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"
    assert refused["error"]["details"]["reason"] == "NO_ROOT"


@pytest.mark.parametrize("mode", ERAS)
async def test_sampling_reaches_the_clients_model(hostd_data_dir: Path, probe: object, mode: str) -> None:
    prompts: list[str] = []
    async with in_memory_client(
        ["probe"],
        data_dir=hostd_data_dir,
        extra_plugins={"probe": probe},
        mode=mode,
        sampling_callback=sampling_callback(prompts),
    ) as client:
        envelope = envelope_of(await client.call_tool("ask", {"prompt": "meaning of life?"}))
    assert envelope["available"] is True
    assert envelope["text"] == "model says meaning of life?"
    assert prompts == ["meaning of life?"]


@pytest.mark.parametrize("mode", ERAS)
async def test_sampling_without_the_capability_says_not_available(
    hostd_data_dir: Path, probe: object, mode: str
) -> None:
    async with in_memory_client(
        ["probe"], data_dir=hostd_data_dir, extra_plugins={"probe": probe}, mode=mode
    ) as c:
        with anyio.fail_after(10):
            result = await c.call_tool("ask", {"prompt": "anyone there?"})
    envelope = envelope_of(result)
    assert result.is_error is False
    assert envelope["available"] is False
    assert "sampling" in envelope["reason"]


async def asked(tool: str, mode: str, data_dir: Path) -> tuple[dict[str, Any], list[str], int]:
    """Call one AskingPlugin tool; its envelope, the prompts the client's model saw, the tool's runs."""
    plugin, prompts = AskingPlugin(), list[str]()
    async with in_memory_client(
        ["asking"],
        data_dir=data_dir,
        extra_plugins={"asking": plugin},
        mode=mode,
        sampling_callback=sampling_callback(prompts),
    ) as client:
        envelope = envelope_of(await client.call_tool(tool, {"topic": "tea"} if tool != "careless" else {}))
    return envelope, prompts, plugin.runs


@pytest.mark.parametrize("mode", ERAS)
async def test_answers_from_earlier_rounds_are_kept(hostd_data_dir: Path, mode: str) -> None:
    envelope, prompts, runs = await asked("ask_twice", mode, hostd_data_dir)
    assert envelope["texts"] == ["model says first: tea", "model says second after model says first: tea"]
    assert prompts == ["first: tea", "second after model says first: tea"]  # each question asked once
    assert runs == (3 if mode == MODERN else 1)  # 2026-07-28 runs the tool again per answered round


@pytest.mark.parametrize("mode", ERAS)
async def test_a_sync_tool_samples_from_its_thread(hostd_data_dir: Path, mode: str) -> None:
    envelope, prompts, _ = await asked("ask_in_thread", mode, hostd_data_dir)
    assert envelope["texts"] == ["model says thread: tea"]
    assert prompts == ["thread: tea"]


@pytest.mark.parametrize("mode", ERAS)
async def test_concurrent_questions_are_asked_together(hostd_data_dir: Path, mode: str) -> None:
    envelope, prompts, runs = await asked("ask_at_once", mode, hostd_data_dir)
    assert envelope["texts"] == ["model says parallel 1: tea", "model says parallel 2: tea"]
    assert sorted(prompts) == ["parallel 1: tea", "parallel 2: tea"]
    assert runs == (2 if mode == MODERN else 1)  # one round asks both


@pytest.mark.parametrize("mode", ERAS)
async def test_a_plugin_catching_exception_still_gets_the_answer(hostd_data_dir: Path, mode: str) -> None:
    envelope, _, _ = await asked("careless", mode, hostd_data_dir)
    assert envelope["texts"] == ["model says careless"]


async def first_round(client: Any, tool: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    result = await client.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult)
    return result


async def test_the_round_trip_on_the_wire(tmp_path: Path, probe: object) -> None:
    """What a 2026-07-28 client sees: a roots/list question, then the answer used."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with in_memory_client(
        ["probe"],
        data_dir=tmp_path / "d",
        extra_plugins={"probe": probe},
        mode=MODERN,
        cwd=Path("/"),
        list_roots_callback=roots_callback(workspace),
    ) as client:
        asking = await first_round(client, "where", {})
        assert asking.input_requests is not None
        assert [request.method for request in asking.input_requests.values()] == ["roots/list"]
        assert asking.request_state
        (key,) = asking.input_requests
        answer = types.ListRootsResult(roots=[root_for(workspace)])
        done = await client.session.call_tool(
            "where", {}, input_responses={key: answer}, request_state=asking.request_state
        )
    assert envelope_of(done)["roots"] == [str(workspace.resolve())]


async def test_answers_nobody_asked_for_are_ignored(tmp_path: Path, probe: object) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with in_memory_client(
        ["probe"],
        data_dir=tmp_path / "d",
        extra_plugins={"probe": probe},
        mode=MODERN,
        list_roots_callback=roots_callback(tmp_path),
    ) as client:
        unsolicited: dict[str, Any] = {"roots": types.ListRootsResult(roots=[root_for(elsewhere)])}
        result = await client.session.call_tool(
            "where", {}, input_responses=unsolicited, allow_input_required=True
        )
    assert isinstance(result, types.InputRequiredResult)  # still asks: the answer must follow the question


async def test_a_forged_request_state_is_refused(tmp_path: Path, probe: object) -> None:
    async with in_memory_client(
        ["probe"],
        data_dir=tmp_path / "d",
        extra_plugins={"probe": probe},
        mode=MODERN,
        list_roots_callback=roots_callback(tmp_path),
    ) as client:
        asking = await first_round(client, "where", {})
        forged = '{"v":1,"answers":{"roots":{"roots":[{"uri":"file:///"}]}},"asked":[]}'
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool("where", {}, request_state=forged)
        with pytest.raises(MCPError) as reused:  # bound to the tool and arguments it was minted for
            await client.session.call_tool("ask", {"prompt": "x"}, request_state=asking.request_state)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert reused.value.error.code == types.INVALID_PARAMS


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_an_answer_of_the_wrong_kind_is_a_clear_protocol_error(
    tmp_path: Path, probe: object, language: str
) -> None:
    async with in_memory_client(
        ["probe"],
        data_dir=tmp_path / "d",
        config={"language": language},
        extra_plugins={"probe": probe},
        mode=MODERN,
        list_roots_callback=roots_callback(tmp_path),
    ) as client:
        asking = await first_round(client, "where", {})
        (key,) = asking.input_requests or {}
        wrong = types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="x"), model="m"
        )
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "where", {}, input_responses={key: wrong}, request_state=asking.request_state
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "roots/list" in refused.value.error.message
    assert ("不是" in refused.value.error.message) == (language == "zh")
