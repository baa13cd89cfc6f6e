"""``hostd tasks export`` and ``hostd tasks import`` (the plugin's ``hostd_register_commands``),
each a real ``hostd`` process: a round trip into another data folder, a refused file, usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hostd_testing import write_config


def hostd(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOSTD_CACHE_DIR": "off"},
    )


def stores(tmp_path: Path, extra: dict[str, Any] | None = None, **profile: Any) -> tuple[Path, Path, Path]:
    """Two data folders (two configs, ``extra`` added to each) and a folder of files both may use."""
    files = tmp_path / "files"
    files.mkdir()
    configs = []
    for name in ("here", "there"):
        (tmp_path / name).mkdir()
        config: dict[str, Any] = {"language": "en", "allowed_roots": [str(files)], **(extra or {})}
        if profile:
            config["profiles"] = {"default": {"plugins": ["tasks"], **profile}}
        configs.append(write_config(tmp_path / name, ["tasks"], config=config))
    return configs[0], configs[1], files


def created(config: Path, **arguments: Any) -> str:
    done = hostd(config, "call", "create_task", "--json", json.dumps(arguments))
    assert done.returncode == 0, done.stderr
    task_id: str = json.loads(done.stdout)["task"]["task_id"]
    return task_id


def test_an_export_imports_into_another_data_folder_once(tmp_path: Path) -> None:
    here, there, files = stores(tmp_path)
    first = created(here, title="Plan", labels=["q1"])
    created(here, title="Build", depends_on=[first], priority="P0")
    target = files / "tasks.json"

    exported = hostd(here, "tasks", "export", "-o", str(target))
    assert (exported.returncode, exported.stdout) == (0, f"Exported 2 tasks to {target}.\n"), exported.stderr
    imported = hostd(there, "tasks", "import", str(target))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("Imported 2 tasks: 2 created"), imported.stdout
    again = hostd(there, "tasks", "import", str(target))
    assert again.returncode == 0, again.stderr
    assert "0 created" in again.stdout, again.stdout
    assert "2 already here" in again.stdout, again.stdout

    printed = hostd(there, "tasks", "export")  # no -o: the document on stdout
    assert printed.returncode == 0, printed.stderr
    kept = ("task_id", "title", "status", "priority", "depends_on", "labels", "created_at")
    document = json.loads(target.read_text(encoding="utf-8"))
    mine = [{key: task[key] for key in kept} for task in document["tasks"]]
    theirs = [{key: task[key] for key in kept} for task in json.loads(printed.stdout)["tasks"]]
    assert theirs == mine
    assert [task["title"] for task in mine] == ["Plan", "Build"]

    markdown = hostd(there, "tasks", "export", "--format", "markdown", "--status", "pending")
    assert markdown.returncode == 0, markdown.stderr
    assert "Plan" in markdown.stdout
    assert "Build" in markdown.stdout


def test_a_file_that_is_not_an_export_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    _, there, files = stores(tmp_path, {"audit": {"enabled": True}})
    bad = files / "bad.json"
    bad.write_text('{"tasks": [', encoding="utf-8")

    refused = hostd(there, "tasks", "import", str(bad))
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.endswith(
        f"hostd tasks import: INVALID_ARGUMENT: {bad} is not a JSON document.\n"
        "hint: Give a file export_tasks wrote with format=json (the Markdown export is for people only).\n"
    ), refused.stderr
    whole = hostd(there, "tasks", "import", str(bad), "--json")
    assert whole.returncode == 1
    assert json.loads(whole.stdout)["error"]["code"] == "INVALID_ARGUMENT"
    listed = hostd(there, "call", "list_tasks")
    assert json.loads(listed.stdout)["total"] == 0
    # The command went through the call pipeline: its audit trail holds each attempt, as a cli call.
    trail = hostd(there, "audit", "--json")
    assert trail.returncode == 0, trail.stderr
    calls = [(e["surface"], e["tool"], e["outcome"]) for e in map(json.loads, trail.stdout.splitlines())]
    assert calls == [
        ("cli", "import_tasks", "INVALID_ARGUMENT"),
        ("cli", "import_tasks", "INVALID_ARGUMENT"),
        ("cli", "list_tasks", "ok"),
    ]


def test_usage_errors_exit_2_and_a_tool_left_out_has_no_command(tmp_path: Path) -> None:
    here, _, _ = stores(tmp_path, tools={"tasks": {"exclude": ["import_tasks"]}})
    missing = hostd(here, "tasks", "import")
    assert missing.returncode == 2
    assert "invalid choice: 'import'" in missing.stderr, missing.stderr
    wrong = hostd(here, "tasks", "export", "--status", "done")
    assert wrong.returncode == 2
    assert "argument --status: invalid choice: 'done'" in wrong.stderr, wrong.stderr
    unknown = hostd(here, "notacommand")
    assert unknown.returncode == 2
    assert "invalid choice: 'notacommand'" in unknown.stderr, unknown.stderr
