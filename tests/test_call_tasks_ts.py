"""Long calls as tasks with the official TypeScript client (issue 34): ``@modelcontextprotocol/client``
2.x pinned to 2026-07-28 and the tasks extension's official requester
``@modelcontextprotocol/ext-tasks`` (both from npm), against two stateless ``hostd serve``
replicas sharing one data folder. What the client does is in ``ts_tasks_client.mjs``: its raw
dispatch alternates between the replicas, so a task made on one is polled and cancelled on the other.

- ``import_memories`` answers a task; settled, its result is the plain call's (a second import as
  a task and the same import by a client without the extension give the same envelope).
- ``read_wechat_articles`` shows its progress (``1/2 ...``) while its second page hangs; another
  member's ``tasks/get`` and ``tasks/cancel`` of it are -32602; the requester's cancel ends it
  ``cancelled`` well before the page would answer, with only the first article written, whole.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conformance_support import install_npm_packages, run_json
from hostd_testing import HttpServer, write_config
from wechat_testlib import ArticleServer, plugin_settings

pytestmark = pytest.mark.npm  # the client, the extension and Node.js 22 come from npm

HERE = Path(__file__).resolve().parent
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
MEMORIES = {
    "format": "hostd-memory-export",
    "version": 3,
    "memories": [{"uri": f"notes://ts-{n}", "content": f"memory {n}"} for n in range(25)],
}


def _envelope(result: dict[str, Any]) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(json.dumps(result["structuredContent"]))
    envelope["metadata"].pop("execution_time_ms", None)
    return envelope


def test_the_official_ts_tasks_requester_across_two_stateless_replicas(tmp_path: Path) -> None:
    install_npm_packages()
    notes = tmp_path / "notes"
    notes.mkdir()
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {TOKENS['alice']}\nbob: {TOKENS['bob']}\n", encoding="utf-8")
    out = notes / "out"
    with ArticleServer() as articles, ExitStack() as stack:
        transport = {"type": "http", "stateless": True, "tokens_file": str(tokens)}
        profile = {"plugins": ["wechat", "memory"], "transport": transport}
        config = write_config(
            tmp_path,
            config={
                "profiles": {"default": profile},
                "allowed_roots": [str(notes)],
                "language": "en",
                "plugins": plugin_settings(articles),
            },
        )
        replicas = [stack.enter_context(HttpServer.start(config)) for _ in range(2)]
        setup = {
            "urls": [replica.url for replica in replicas],
            "alice": TOKENS["alice"],
            "bob": TOKENS["bob"],
            "memories": MEMORIES,
            "readArguments": {
                "urls": [
                    articles.url("/s/article/1?title=First"),
                    articles.url("/s/hang?seconds=60"),
                ],
                "concurrency": 2,
                "output_dir": str(out),
                "fetch_strategy": "http",
            },
        }
        report = run_json(["node", str(HERE / "ts_tasks_client.mjs"), json.dumps(setup)], cwd=tmp_path)

        assert report["era"] == "modern"
        # The profile serves memory, whose views (MCP Apps) are the other extension.
        assert report["extensions"] == {"io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/ui": {}}
        assert report["capabilities"]["execution"] is True
        assert report["capabilities"]["cancellation"] is True
        assert (report["importKind"], report["importOutcome"]) == ("task", "completed")
        first = _envelope(report["importResult"])
        assert first["status"] == "success", first
        assert first["created"] == 25, first
        assert report["againKind"] == "task"
        assert "resultType" not in report["plainResult"] or report["plainResult"]["resultType"] == "complete"
        assert _envelope(report["againResult"]) == _envelope(report["plainResult"])
        assert _envelope(report["plainResult"])["skipped"] == 25

        assert report["readKind"] == "task"
        assert report["progress"][-1].startswith("1/2 ok: First"), report["progress"]
        for refusal in (report["bobGet"], report["bobCancel"]):
            assert refusal["code"] == -32602, refusal
            assert "Failed to retrieve task" in refusal["message"], refusal
        assert report["cancelOutcome"] == "cancelled", report
        assert report["cancelSeconds"] < 20
        # The raw dispatch went to both replicas: tools/call and tasks/* landed on each.
        assert {step["replica"] for step in report["steps"] if step["method"] == "tasks/get"} == {0, 1}

    written = sorted(path.name for path in out.rglob("*") if path.is_file())
    assert len(written) == 1, written
    assert written[0].endswith(".md"), written
    assert "First" in (out / written[0]).read_text(encoding="utf-8")
