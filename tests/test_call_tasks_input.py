"""A task that asks the client mid-way (issue 34: long calls as tasks, and confirmations): the
question is the task's ``inputRequests`` while it is ``input_required``, the client answers with
``tasks/update``, and the call goes on where it waited, on a real ``hostd serve``.

- stdio: ``import_memories`` that overwrites asks the person to confirm; declined, nothing changes
  and the task's result says so; accepted, the import overwrites. A wrong answer is -32602.
- stateless HTTP, two replicas sharing the data folder: ``summarize_session`` asks the client's
  model; the question is read and answered on the replica that does not run the call, and the
  summary is the client's text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from call_tasks_support import TasksClient, answer_task, start_task, wait_for_end, wait_for_question
from hostd_testing import envelope_of, served_client
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError
from test_call_tasks import MEMORIES, MODERN, _bearer, _config, two_replicas

pytestmark = pytest.mark.anyio


async def _never_asked_directly(context: ClientRequestContext, params: Any) -> Any:
    """Declares the capability; a task's questions come through ``tasks/get``, never here."""
    raise AssertionError(f"asked directly: {params}")


async def _answer_of(client: Any, task_id: str, action: str) -> dict[str, Any]:
    questions = await wait_for_question(client.session, task_id)
    assert len(questions) == 1, questions
    [(key, question)] = questions.items()
    assert question["method"] == "elicitation/create", question
    assert question["params"]["message"].startswith("Replace "), question
    assert await answer_task(client.session, task_id, {key: {"action": action}}) == {"resultType": "complete"}
    state = await wait_for_end(client.session, task_id)
    assert state.status == "completed", state
    return envelope_of(types.CallToolResult.model_validate(state.result))


async def test_an_overwriting_import_as_a_task_asks_through_the_task(tmp_path: Path) -> None:
    config = _config(tmp_path, ["memory"])
    changed = {**MEMORIES, "memories": [{"uri": "notes://item-0", "content": "changed", "tags": ["bulk"]}]}
    async with served_client(
        config, mode=MODERN, extensions=[TasksClient()], elicitation_callback=_never_asked_directly
    ) as client:
        await client.call_tool("import_memories", {"data": MEMORIES})  # nothing to confirm yet
        declined = await start_task(client, "import_memories", {"data": changed, "strategy": "overwrite"})
        kept = await _answer_of(client, declined.task_id, "decline")
        assert kept["metadata"]["confirmation"] == "declined", kept
        assert kept["message"].startswith("Nothing was done: the user declined."), kept
        still = envelope_of(await client.call_tool("read_memory", {"uri": "notes://item-0"}))
        assert still["content"] == "memory number 0", still

        accepted = await start_task(client, "import_memories", {"data": changed, "strategy": "overwrite"})
        done = await _answer_of(client, accepted.task_id, "accept")
        assert done["metadata"]["confirmation"] == "accepted", done
        assert done["overwritten"] == 1, done
        now = envelope_of(await client.call_tool("read_memory", {"uri": "notes://item-0"}))
        assert now["content"] == "changed", now

        # An answer of the wrong kind for the question's key is refused, and the task still waits.
        third = await start_task(client, "import_memories", {"data": MEMORIES, "strategy": "overwrite"})
        [key] = await wait_for_question(client.session, third.task_id)
        with pytest.raises(MCPError) as wrong:
            await answer_task(client.session, third.task_id, {key: {"role": "assistant"}})
        assert wrong.value.error.code == types.INVALID_PARAMS
        assert key in await wait_for_question(client.session, third.task_id)
        await _answer_of(client, third.task_id, "cancel")


async def _never_sampled_directly(context: ClientRequestContext, params: Any) -> Any:
    raise AssertionError(f"sampled directly: {params}")


async def test_a_sampling_summary_as_a_task_is_answered_on_the_other_replica(tmp_path: Path) -> None:
    config = _config(tmp_path, ["deep-thinking"], transport={"type": "http", "stateless": True})
    with two_replicas(config) as (first, second):
        async with (
            first.client(
                mode=MODERN,
                headers=_bearer("alice"),
                extensions=[TasksClient()],
                sampling_callback=_never_sampled_directly,
            ) as on_a,
            second.client(mode=MODERN, headers=_bearer("alice"), extensions=[TasksClient()]) as on_b,
        ):
            for number in (1, 2):
                thought = {
                    "session_id": "plan",
                    "thought": f"step {number} of the plan",
                    "thoughtNumber": number,
                    "totalThoughts": 2,
                    "nextThoughtNeeded": number < 2,
                }
                answer = envelope_of(await on_a.call_tool("sequential_thinking", thought))
                assert answer["status"] == "success", answer
            task = await start_task(on_a, "summarize_session", {"session_id": "plan"})
            questions = await wait_for_question(on_b.session, task.task_id)
            [(key, question)] = questions.items()
            assert question["method"] == "sampling/createMessage", question
            assert "step 1 of the plan" in question["params"]["messages"][0]["content"]["text"], question
            written = {
                "role": "assistant",
                "content": {"type": "text", "text": "Two steps, one plan."},
                "model": "m",
            }
            await answer_task(on_b.session, task.task_id, {key: written})
            state = await wait_for_end(on_b.session, task.task_id)
    assert state.status == "completed", state
    summary = envelope_of(types.CallToolResult.model_validate(state.result))
    assert "Two steps, one plan." in str(summary), summary
