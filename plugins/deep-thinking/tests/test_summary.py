"""summarize_session: built from the session's structure, or written by the client's model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from deep_thinking_support import PLUGIN, config_for, sample_session, thought
from hostd_testing import Client, fails, in_memory_client, ok, prompt_text

pytestmark = pytest.mark.anyio

MODEL_TEXT = "The trip was planned; Lyon by car-share won."


def model(prompts: list[str]) -> Any:
    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(prompt_text(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=MODEL_TEXT), model="test-model"
        )

    return sample


async def test_structural_summary_of_revisions_branches_and_conclusions(client: Client) -> None:
    await sample_session(client, "trip")
    answer = await ok(client, "summarize_session", session_id="trip")
    assert answer["summarizer"] == "structural"
    assert answer["model"] is None
    assert answer["warnings"] == []
    assert answer["counts"] == {
        "thoughts": 8,
        "main_line": 5,
        "branches": 2,
        "revisions": 1,
        "dangling_references": 0,
        "adjustments": 1,
    }
    ends = {end["branch_id"]: end for end in answer["conclusions"]}
    assert ends[None]["text"] == "Decide: Lyon by car-share on Sunday"
    assert ends[None]["final"] is True
    assert ends["bus"]["thought_number"] == 3
    assert ends["bus"]["final"] is False
    assert answer["open_branches"] == ["stay-home", "bus"]
    (revision,) = answer["revisions"]
    assert revision["revises_thought"] == 2
    assert revision["original"].startswith("Gather the facts")
    assert revision["replacement"].startswith("Recheck the facts")
    text = answer["summary"]
    for heading in ("## Conclusions", "## Revisions", "## Open branches"):
        assert heading in text
    assert "Gather the facts: trains, hostels, weather → Recheck the facts" in text
    assert answer["stages"] == []  # no stage given, no template


async def test_stages_from_the_thoughts_or_the_template(client: Client) -> None:
    for number, stage in enumerate(["problem definition", "analysis", "Analysis", "conclusion"], start=1):
        await ok(client, "sequential_thinking", **thought(number, 4, session_id="st", stage=stage))
    spans = (await ok(client, "summarize_session", session_id="st"))["stages"]
    assert [(s["stage"], s["thought_count"], s["source"]) for s in spans] == [
        ("problem definition", 1, "stage"),
        ("analysis", 2, "stage"),
        ("conclusion", 1, "stage"),
    ]
    await ok(client, "create_session", name="t", template_id="decision_making", session_id="tpl")
    for number in (1, 2):
        await ok(client, "sequential_thinking", **thought(number, 5, session_id="tpl"))
    spans = (await ok(client, "summarize_session", session_id="tpl"))["stages"]
    assert [(s["stage"], s["source"]) for s in spans] == [
        ("Frame the decision", "template"),
        ("Set the criteria", "template"),
    ]


async def test_chinese_summary_has_no_english_words(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        await ok(zh, "sequential_thinking", **thought(1, 2, "先看问题", session_id="z"))
        await ok(
            zh,
            "sequential_thinking",
            **thought(2, 2, "修订：问题更大", session_id="z", isRevision=True, revisesThought=1),
        )
        await ok(
            zh,
            "sequential_thinking",
            **thought(2, 2, "另一条路", session_id="z", branchFromThought=1, branchId="b1"),
        )
        answer = await ok(zh, "summarize_session", session_id="z")
    # Only the session's own words, ids and status values may be Latin.
    leftover = re.sub(r"b1|active|z\b|#\d+", "", answer["summary"] + answer["message"])
    assert not re.search(r"[A-Za-z]{2,}", leftover), leftover
    assert "## 结论" in answer["summary"]
    assert "## 修订" in answer["summary"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_clients_model_writes_it_when_offered(
    hostd_data_dir: Path, hostd_roots: Path, mode: str
) -> None:
    prompts: list[str] = []
    async with in_memory_client(
        [PLUGIN],
        data_dir=hostd_data_dir,
        config=config_for(hostd_roots),
        mode=mode,
        sampling_callback=model(prompts),
    ) as client:
        await sample_session(client, "trip")
        answer = await ok(client, "summarize_session", session_id="trip")
        structural = await ok(client, "summarize_session", session_id="trip", use_sampling=False)
    assert answer["summarizer"] == "sampling"
    assert answer["model"] == "test-model"
    assert answer["summary"].strip() == MODEL_TEXT
    assert "client's model" in answer["message"]
    assert answer["counts"] == structural["counts"]
    assert answer["conclusions"] == structural["conclusions"]
    assert structural["summarizer"] == "structural"
    assert len(prompts) == 1  # asked once, even where the tool runs again with the answer
    assert "Lyon by car-share" in prompts[0]
    assert "branch bus from thought 1" in prompts[0]


async def test_a_refusing_client_gets_the_structural_summary_with_a_warning(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    async def refuse(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=-1, message="user declined")

    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots), sampling_callback=refuse
    ) as client:
        await sample_session(client, "trip")
        answer = await ok(client, "summarize_session", session_id="trip")
    assert answer["summarizer"] == "structural"
    assert "## Conclusions" in answer["summary"]
    assert [w["code"] for w in answer["warnings"]] == ["SAMPLING_FAILED"]
    assert "declined" in answer["warnings"][0]["message"]


async def test_empty_missing_and_bad_sessions(client: Client) -> None:
    await ok(client, "create_session", name="Empty", session_id="empty")
    empty = await ok(client, "summarize_session", session_id="empty")
    assert empty["counts"]["thoughts"] == 0
    assert empty["conclusions"] == []
    assert "No thoughts yet" in empty["summary"]
    await fails(client, "summarize_session", "NOT_FOUND", session_id="nope")
    await fails(client, "summarize_session", "INVALID_ARGUMENT", session_id="../x")
