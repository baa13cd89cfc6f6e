"""update_summary against a hostile file system: folders swapped for symlinks mid-call, hard
links to files outside the roots, absurdly deep paths, broken client roots (issue 17, 14).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from hostd_testing import Connect, envelope_of, in_memory_client, root_for, swapping
from pydantic import FileUrl
from summary_writer_support import TOOL, host_config

pytestmark = pytest.mark.anyio

RACE_CALLS = 3000


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.mark.slow
async def test_a_folder_swapped_for_a_symlink_never_gets_a_write_outside(
    tmp_path: Path, hostd_data_dir: Path
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "box").mkdir()
    (root / "evil").symlink_to(outside, target_is_directory=True)
    answers: list[dict[str, Any]] = []
    async with in_memory_client(data_dir=hostd_data_dir, config=host_config([root])) as client:
        with swapping(root / "box", root / "evil") as swaps:
            for number in range(RACE_CALLS):
                mode = "append" if number % 2 else "overwrite"
                arguments = {"content": f"call {number}", "file_path": f"box/{number}.md", "mode": mode}
                answers.append(envelope_of(await client.call_tool(TOOL, arguments)))
    assert swaps[0] > 100, "the swapper must have raced the calls"
    assert files_under(outside) == []
    succeeded = [answer for answer in answers if answer["status"] == "success"]
    assert succeeded, "some calls must win the race"
    real_root = root.resolve()
    for answer in succeeded:
        written = Path(answer["file_path"])
        assert written.is_relative_to(real_root)
        assert ".." not in written.parts
    for answer in answers:
        if answer["status"] == "error":
            assert answer["error"]["code"] == "PATH_NOT_ALLOWED", answer["error"]
    # The real folder ends under either name; every reported file is in it, none went out.
    inside = {path.name for path in files_under(root)}
    assert {Path(answer["file_path"]).name for answer in succeeded} <= inside


@pytest.mark.parametrize("mode", ["append", "overwrite"])
async def test_a_hard_link_to_a_file_outside_is_refused(
    tmp_path: Path, hostd_data_dir: Path, mode: str
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("outside, untouched")
    os.link(outside / "secret.md", root / "x.md")
    async with in_memory_client(data_dir=hostd_data_dir, config=host_config([root], language="zh")) as client:
        answer = envelope_of(
            await client.call_tool(TOOL, {"content": "injected", "file_path": "x.md", "mode": mode})
        )
    assert answer["status"] == "error"
    assert answer["error"]["code"] == "PATH_NOT_ALLOWED"
    assert answer["error"]["details"]["reason"] == "HARD_LINK"
    assert "硬链接" in answer["error"]["message"]
    assert answer["error"]["hint"]
    assert (outside / "secret.md").read_text() == "outside, untouched"
    assert (root / "x.md").read_text() == "outside, untouched"


async def test_a_path_1500_folders_deep_is_path_too_long(tmp_path: Path, hostd_data_dir: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    async with in_memory_client(data_dir=hostd_data_dir, config=host_config([root])) as client:
        answer = envelope_of(
            await client.call_tool(TOOL, {"content": "x", "file_path": "a/" * 1500 + "x.md"})
        )
    assert answer["status"] == "error"
    assert answer["error"]["code"] == "PATH_TOO_LONG"
    assert "folders deep" in answer["error"]["hint"]
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("spelling", ["%00", "\x00"])
async def test_a_client_root_holding_nul_is_ignored_not_internal(
    tmp_path: Path, hostd_data_dir: Path, spelling: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    broken = f"file://{tmp_path}/bad{spelling}root"

    async def list_roots(context: Any) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=FileUrl(broken)), root_for(root)])

    config = host_config(None)
    async with in_memory_client(
        data_dir=hostd_data_dir, config=config, list_roots_callback=list_roots
    ) as client:
        answer = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": "a.md"}))
    assert answer["status"] == "success", answer
    assert Path(answer["file_path"]).parent == root.resolve()
    assert any("NUL" in record.getMessage() for record in caplog.records)


async def test_only_broken_client_roots_is_a_clear_refusal(tmp_path: Path, hostd_data_dir: Path) -> None:
    async def list_roots(context: Any) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=FileUrl(f"file://{tmp_path}/bad%00root"))])

    config = host_config(None, language="zh")
    async with in_memory_client(
        data_dir=hostd_data_dir, config=config, cwd=tmp_path, list_roots_callback=list_roots
    ) as client:
        answer = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": "a.md"}))
    assert answer["status"] == "error"
    assert answer["error"]["code"] == "PATH_NOT_ALLOWED"
    assert answer["error"]["details"]["reason"] == "NO_ROOT"
    assert "NUL" in answer["error"]["hint"]
    assert not (tmp_path / "a.md").exists()


async def test_appending_to_a_new_file_says_created_not_appended(
    tmp_path: Path, hostd_data_dir: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    messages = {}
    for language in ("zh", "en"):
        async with in_memory_client(
            data_dir=hostd_data_dir, config=host_config([root], language=language)
        ) as client:
            first = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": f"{language}.md"}))
            second = envelope_of(
                await client.call_tool(TOOL, {"content": "y", "file_path": f"{language}.md"})
            )
        assert first["created"] is True
        assert second["created"] is False
        messages[language] = (first["message"], second["message"])
    assert "追加" not in messages["zh"][0]
    assert "创建" in messages["zh"][0]
    assert "追加至" in messages["zh"][1]
    assert "appended" not in messages["en"][0]
    assert "created" in messages["en"][0]
    assert "appended" in messages["en"][1]


@pytest.mark.served
async def test_broken_client_roots_and_deep_paths_over_a_real_server_too(
    connect: Connect, tmp_path: Path
) -> None:
    """The same answers in-process and from a real ``hostd serve`` (roots arrive over the wire)."""
    root = tmp_path / "root"
    root.mkdir()
    offered = [f"file://{tmp_path}/bad%00root", root.as_uri()]

    async def list_roots(context: Any) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=FileUrl(uri)) for uri in offered])

    async with connect(config=host_config(None), cwd=tmp_path, list_roots_callback=list_roots) as client:
        written = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": "a.md"}))
        deep = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": "a/" * 1500 + "x.md"}))
    assert written["status"] == "success", written
    assert Path(written["file_path"]) == root.resolve() / "a.md"
    assert deep["status"] == "error", deep
    assert deep["error"]["code"] == "PATH_TOO_LONG", deep
    offered.pop()
    async with connect(config=host_config(None), cwd=tmp_path, list_roots_callback=list_roots) as client:
        refused = envelope_of(await client.call_tool(TOOL, {"content": "x", "file_path": "b.md"}))
    assert refused["status"] == "error", refused
    assert refused["error"]["details"]["reason"] == "NO_ROOT", refused
    assert not (tmp_path / "b.md").exists()
