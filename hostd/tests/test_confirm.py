"""``ToolContext.confirm``: the user's answer through the client's elicitation, on both protocol
eras, in-process with the SDK's own client (the real plugins' calls, on real servers, are in
``tests/test_confirmations.py``).

Before 2026-07-28 the host sends ``elicitation/create`` on the call's own stream; from it on the
question rides in an ``input_required`` result and the tool runs again with the answer. A client
that cannot be asked gets ``unavailable`` and the tool acts as it always has.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
import pytest
from dirty_equals import IsFloat
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.protocol.input_rounds import CONFIRM_PREFIX, InputRound, can_confirm
from hostd_testing import envelope_of, in_memory_client
from mcp.shared.exceptions import MCPError

from hostd import Confirmation, NotConfirmed, Text, ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]
Action = Literal["accept", "decline", "cancel"]
QUESTION = Text(en="Throw the box away?", zh="扔掉这个盒子？")


class Thrown(ToolOutput):
    answer: Confirmation
    thrown: int


class BoxPlugin:
    """A box that tools throw away after asking, async and from a worker thread."""

    def __init__(self) -> None:
        self.thrown = 0
        self.runs = 0

    def _after(self, answer: Confirmation) -> Thrown:
        if answer == "declined" or answer == "cancelled":
            raise NotConfirmed(answer, Text(en="The box stays.", zh="盒子留着。"))
        self.thrown += 1
        return Thrown(answer=answer, thrown=self.thrown).with_message(Text(en="Thrown.", zh="已扔掉。"))

    async def throw_away(self, ctx: ToolContext[None]) -> Thrown:
        """Throw the box away once the user agrees."""
        self.runs += 1
        return self._after(await ctx.confirm(QUESTION))

    def throw_away_sync(self, ctx: ToolContext[None]) -> Thrown:
        """The same from a sync tool's worker thread."""
        self.runs += 1
        return self._after(ctx.confirm_sync(QUESTION))

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(self.throw_away, destructive=True)
        register(self.throw_away_sync, destructive=True)


def answering(action: Action, asked: list[str]) -> Any:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return elicit


async def throw(
    data_dir: Path, mode: str, tool: str, *, config: dict[str, Any] | None = None, **client_options: Any
) -> tuple[dict[str, Any], bool, BoxPlugin]:
    plugin = BoxPlugin()
    async with in_memory_client(
        ["box"],
        data_dir=data_dir,
        config={"language": "en", **(config or {})},
        extra_plugins={"box": plugin},
        mode=mode,
        **client_options,
    ) as client:
        result = await client.call_tool(tool, {})
    return envelope_of(result), bool(result.is_error), plugin


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("tool", ["throw_away", "throw_away_sync"])
async def test_accept_acts_and_the_answer_says_the_user_confirmed(
    hostd_data_dir: Path, mode: str, tool: str
) -> None:
    asked: list[str] = []
    envelope, is_error, plugin = await throw(
        hostd_data_dir, mode, tool, elicitation_callback=answering("accept", asked)
    )
    assert (envelope, is_error) == (
        {
            "status": "success",
            "message": "Thrown.",
            "answer": "accepted",
            "thrown": 1,
            "metadata": {"execution_time_ms": IsFloat(ge=0), "confirmation": "accepted"},
        },
        False,
    )
    assert asked == ["Throw the box away?"]
    # 2026-07-28 runs the tool again with the answer: asked once, thrown once.
    assert plugin.runs == (1 if mode == "legacy" else 2)
    assert plugin.thrown == 1


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("decline", ("declined", "Nothing was done: the user declined. The box stays.")),
        (
            "cancel",
            (
                "cancelled",
                "Nothing was done: the user dismissed the question without answering. The box stays.",
            ),
        ),
    ],
)
async def test_decline_and_cancel_do_nothing_and_say_so(
    hostd_data_dir: Path, mode: str, action: Action, said: tuple[str, str]
) -> None:
    asked: list[str] = []
    envelope, is_error, plugin = await throw(
        hostd_data_dir, mode, "throw_away_sync", elicitation_callback=answering(action, asked)
    )
    recorded, message = said
    assert (envelope, is_error) == (
        {
            "status": "success",
            "message": message,
            "metadata": {"execution_time_ms": IsFloat(ge=0), "confirmation": recorded},
        },
        False,
    )
    assert asked == ["Throw the box away?"]
    assert plugin.thrown == 0


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_without_elicitation_is_not_asked_and_the_tool_acts(
    hostd_data_dir: Path, mode: str
) -> None:
    envelope, is_error, plugin = await throw(hostd_data_dir, mode, "throw_away")
    assert (envelope, is_error) == (
        {
            "status": "success",
            "message": "Thrown.",
            "answer": "unavailable",
            "thrown": 1,
            "metadata": {"execution_time_ms": IsFloat(ge=0)},
        },
        False,
    )
    assert plugin.runs == 1


async def test_a_client_answering_an_error_has_not_said_yes(hostd_data_dir: Path) -> None:
    async def refuse(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no dialogs here")

    envelope, is_error, plugin = await throw(
        hostd_data_dir, "legacy", "throw_away", elicitation_callback=refuse
    )
    assert envelope["metadata"]["confirmation"] == "cancelled"
    assert not is_error
    assert plugin.thrown == 0


def test_only_a_client_showing_forms_can_confirm() -> None:
    def capabilities(**elicitation: Any) -> types.ClientCapabilities:
        return types.ClientCapabilities(elicitation=types.ElicitationCapability(**elicitation))

    assert can_confirm(None) is False
    assert can_confirm(types.ClientCapabilities()) is False
    assert can_confirm(capabilities()) is True  # {} is form mode
    assert can_confirm(capabilities(form=types.FormElicitationCapability())) is True
    assert can_confirm(capabilities(url=types.UrlElicitationCapability())) is False
    both = capabilities(form=types.FormElicitationCapability(), url=types.UrlElicitationCapability())
    assert can_confirm(both) is True


def test_a_confirmation_answered_with_something_else_is_refused(hostd_data_dir: Path) -> None:
    """An answer under a confirmation's key must be an elicitation result (-32602 otherwise)."""
    key = CONFIRM_PREFIX + "0" * 32
    state = json.dumps({"v": 1, "answers": {}, "asked": [key]})
    sampled = types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="yes"), model="m"
    )
    params = types.CallToolRequestParams(
        name="throw_away", arguments={}, request_state=state, input_responses={key: sampled}
    )
    host = Host(
        config_from_mapping(
            {"language": "en", "profiles": {"default": {"plugins": []}}}, None, data_dir=hostd_data_dir
        )
    )
    with pytest.raises(MCPError) as refused:
        InputRound.of(params, host)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "elicitation/create" in refused.value.error.message
    answered = types.CallToolRequestParams(
        name="throw_away",
        arguments={},
        request_state=state,
        input_responses={key: types.ElicitResult(action="decline")},
    )
    assert InputRound.of(answered, host).answer(key, types.ElicitResult) == types.ElicitResult(
        action="decline"
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_question_and_answer_in_the_servers_language(hostd_data_dir: Path, mode: str) -> None:
    asked: list[str] = []
    envelope, is_error, plugin = await throw(
        hostd_data_dir,
        mode,
        "throw_away",
        config={"language": "zh"},
        elicitation_callback=answering("decline", asked),
    )
    assert (envelope, is_error) == (
        {
            "status": "success",
            "message": "未执行：用户拒绝了。盒子留着。",
            "metadata": {"execution_time_ms": IsFloat(ge=0), "confirmation": "declined"},
        },
        False,
    )
    assert asked == ["扔掉这个盒子？"]
    assert plugin.thrown == 0
