"""export_memories writes like every file-writing tool: missing parent folders are made inside
the roots, hard links are refused, deep paths are PATH_TOO_LONG (issue 14 #5, issue 17).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostd_testing import call, ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio


async def test_export_to_a_missing_folder_makes_it_like_the_other_writers(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="core://me", content="我是助手", priority=0)
        written = await ok(client, "export_memories", output_path="backups/2026/memories.json")
    target = hostd_roots / "backups" / "2026" / "memories.json"
    assert written["output_path"] == str(target)
    assert json.loads(target.read_text(encoding="utf-8"))["format"] == "hostd-memory-export"


async def test_export_over_a_hard_link_is_refused_and_the_outside_file_kept(
    memory_client: MemoryClient, hostd_roots: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("outside, untouched")
    os.link(outside, hostd_roots / "linked.json")
    async with memory_client(language="zh") as client:
        refused = await call(client, "export_memories", output_path="linked.json", overwrite=True)
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"
    assert refused["error"]["details"]["reason"] == "HARD_LINK"
    assert refused["error"]["hint"]
    assert outside.read_text() == "outside, untouched"


async def test_export_to_a_path_1500_folders_deep_is_path_too_long(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    async with memory_client() as client:
        refused = await call(client, "export_memories", output_path="a/" * 1500 + "m.json")
    assert refused["error"]["code"] == "PATH_TOO_LONG"
    assert refused["error"]["hint"]
    assert list(hostd_roots.iterdir()) == []
