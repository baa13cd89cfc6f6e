"""export_session and import_session against a hostile file system (issue 17): a folder swapped
for a symlink mid-call never takes a write or gives a read outside the roots; hard links are
not written; deep paths are PATH_TOO_LONG, not INTERNAL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from deep_thinking_support import sample_session
from hostd_testing import Client, call, fails, ok, swapping

pytestmark = pytest.mark.anyio

RACE_ROUNDS = 300


async def test_a_folder_swapped_for_a_symlink_never_leaks_an_export_or_an_import(
    client: Client, hostd_roots: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    await sample_session(client, "trip")
    await ok(client, "export_session", session_id="trip", format="json", output_path="box/s.json")
    decoy = json.loads((hostd_roots / "box" / "s.json").read_text(encoding="utf-8"))
    decoy["session_id"] = "stolen"
    (outside / "s.json").write_text(json.dumps(decoy), encoding="utf-8")
    (hostd_roots / "evil").symlink_to(outside, target_is_directory=True)
    answers = []
    with swapping(hostd_roots / "box", hostd_roots / "evil") as swaps:
        for number in range(RACE_ROUNDS):
            answers.append(
                await call(
                    client,
                    "export_session",
                    session_id="trip",
                    format="markdown",
                    output_path=f"box/{number}.md",
                )
            )
            answers.append(await call(client, "import_session", path_or_data="box/s.json", overwrite=True))
    assert swaps[0] > 10, "the swapper must have raced the calls"
    assert sorted(os.listdir(outside)) == ["s.json"], "an export landed outside the root"
    imported = [answer["session"]["session_id"] for answer in answers if "session" in answer]
    assert imported, "an import read the file outside the root"
    assert "stolen" not in imported, "an import read the file outside the root"
    for answer in answers:
        if answer["status"] == "error":
            assert answer["error"]["code"] == "PATH_NOT_ALLOWED", answer["error"]
    exported = [answer for answer in answers if answer.get("output_path")]
    assert exported
    assert all(Path(a["output_path"]).is_relative_to(hostd_roots.resolve()) for a in exported)


async def test_export_over_a_hard_link_is_refused(client: Client, hostd_roots: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("outside, untouched")
    os.link(outside, hostd_roots / "linked.md")
    await sample_session(client, "trip")
    refused = await fails(
        client,
        "export_session",
        "PATH_NOT_ALLOWED",
        session_id="trip",
        format="markdown",
        output_path="linked.md",
        overwrite=True,
    )
    assert refused["error"]["details"]["reason"] == "HARD_LINK"
    assert outside.read_text() == "outside, untouched"


async def test_deep_paths_are_path_too_long_for_export_and_import(client: Client, hostd_roots: Path) -> None:
    await sample_session(client, "trip")
    deep = "a/" * 1500
    exported = await fails(
        client,
        "export_session",
        "PATH_TOO_LONG",
        session_id="trip",
        format="json",
        output_path=deep + "t.json",
    )
    assert exported["error"]["hint"]
    await fails(client, "import_session", "PATH_TOO_LONG", path_or_data=deep + "t.json")
    assert not (hostd_roots / "a").exists()


async def test_import_of_a_file_over_the_limit_is_too_long(client: Client, hostd_roots: Path) -> None:
    from hostd_deep_thinking.tools import MAX_IMPORT_CHARS

    (hostd_roots / "big.json").write_bytes(b" " * (MAX_IMPORT_CHARS + 1))
    refused = await fails(client, "import_session", "TOO_LONG", path_or_data="big.json")
    assert refused["error"]["details"]["limit_bytes"] == MAX_IMPORT_CHARS
