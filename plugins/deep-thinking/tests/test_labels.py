"""Optional thought metadata: ``stage`` and ``tags`` on sequential_thinking, shown and filtered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deep_thinking_support import thought
from hostd_testing import Client, fails, ok

pytestmark = pytest.mark.anyio


async def labelled_session(client: Client) -> None:
    await ok(
        client,
        "sequential_thinking",
        **thought(1, 3, "What exactly is slow?", session_id="lab", stage="problem_definition", tags=["perf"]),
    )
    await ok(
        client,
        "sequential_thinking",
        **thought(
            2, 3, "Profile the loop", session_id="lab", stage="Analysis", tags=["perf", "Risk", "risk "]
        ),
    )
    await ok(client, "sequential_thinking", **thought(3, 3, "Cache it", more=False, session_id="lab"))


async def test_stage_and_tags_are_stored_and_filter_get_session(client: Client) -> None:
    await labelled_session(client)
    page = await ok(client, "get_session", session_id="lab")
    stored = [(t["stage"], t["tags"]) for t in page["thoughts"]]
    # Trimmed, de-duplicated case-insensitively (the first spelling kept); absent when not sent.
    assert stored == [("problem_definition", ["perf"]), ("Analysis", ["perf", "Risk"]), (None, [])]
    assert page["matching_thoughts"] == 3
    by_stage = await ok(client, "get_session", session_id="lab", stage="problem definition")
    assert [t["sequence"] for t in by_stage["thoughts"]] == [1]
    assert by_stage["matching_thoughts"] == 1
    by_tags = await ok(client, "get_session", session_id="lab", tags=["PERF", "risk"])
    assert [t["sequence"] for t in by_tags["thoughts"]] == [2]
    assert "1 match" in by_tags["message"]
    none = await ok(client, "get_session", session_id="lab", stage="conclusion")
    assert none["thoughts"] == []
    assert none["next_cursor"] is None
    assert none["matching_thoughts"] == 0


async def test_filtered_pages_follow_the_cursor(client: Client) -> None:
    for n in range(1, 251):
        await ok(client, "sequential_thinking", **thought(n, 250, session_id="long", tags=[f"t{n % 2}"]))
    seen, cursor = [], None
    while True:
        page = await ok(
            client, "get_session", session_id="long", tags=["t0"], **({"cursor": cursor} if cursor else {})
        )
        seen += [t["sequence"] for t in page["thoughts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(2, 251, 2))


@pytest.mark.files_only
async def test_official_fields_only_store_exactly_what_they_did(client: Client, hostd_data_dir: Path) -> None:
    answer = await ok(client, "sequential_thinking", **thought(1, 1, session_id="plain"))
    assert "stage" not in answer
    assert "tags" not in answer
    journal = (hostd_data_dir / "deep-thinking" / "sessions" / "plain.journal").read_text(encoding="utf-8")
    assert "stage" not in json.loads(journal)["thought"]
    assert "tags" not in json.loads(journal)["thought"]


async def test_labels_appear_in_exports_and_diagrams(client: Client) -> None:
    await labelled_session(client)
    for fmt in ("markdown", "text", "html"):
        content = (await ok(client, "export_session", session_id="lab", format=fmt))["content"]
        assert "Analysis" in content, fmt
        assert "Risk" in content, fmt
    ascii_art = (await ok(client, "visualize_session", session_id="lab", format="ascii"))["diagram"]
    assert "[Analysis #perf #Risk]" in ascii_art
    assert "Cache it\n" in ascii_art
    mermaid = (await ok(client, "visualize_session", session_id="lab"))["diagram"]
    assert "Analysis #35;perf" in mermaid
    exported = (await ok(client, "export_session", session_id="lab", format="json"))["content"]
    imported = await ok(client, "import_session", path_or_data=exported, session_id="lab-copy")
    assert imported["session"]["thought_count"] == 3
    copy = await ok(client, "get_session", session_id="lab-copy", stage="analysis")
    assert copy["thoughts"][0]["tags"] == ["perf", "Risk"]


async def test_bad_labels_are_refused(client: Client) -> None:
    for bad in ({"stage": "a\x00b"}, {"stage": "   "}, {"tags": ["ok", "\n"]}, {"tags": ["x" * 33]}):
        envelope = await fails(client, "sequential_thinking", "INVALID_ARGUMENT", **thought(1, 1, **bad))
        assert envelope["error"]["details"]["argument"].split(".")[0] in ("stage", "tags"), envelope
    await fails(
        client, "sequential_thinking", "INVALID_ARGUMENT", **thought(1, 1, tags=[f"t{i}" for i in range(17)])
    )
    page = await ok(client, "list_sessions")
    assert page["total"] == 0  # nothing was half-written
