"""User templates: YAML/JSON files in the templates folder, listed beside the built-in ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from deep_thinking_support import PLUGIN, config_for, thought
from hostd_testing import Client, fails, in_memory_client, ok

pytestmark = pytest.mark.anyio

REVIEW_YAML = """\
name: {en: Code review, zh: 代码评审}
description: Read a change like its next maintainer.
steps:
  - title: {en: Understand the goal, zh: 理解目标}
    guidance: What should the change do, and for whom?
  - title: Read the tests
    guidance: {en: "Do they fail without the change?"}
  - title: Decide
    guidance: Approve, or say what must change.
"""


def folder(hostd_data_dir: Path) -> Path:
    path = hostd_data_dir / PLUGIN / "templates"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def test_a_yaml_template_is_listed_and_plans_a_session(client: Client, hostd_data_dir: Path) -> None:
    (folder(hostd_data_dir) / "code_review.yaml").write_text(REVIEW_YAML, encoding="utf-8")
    listed = await ok(client, "list_templates")
    ids = [t["template_id"] for t in listed["templates"]]
    assert ids[:4] == ["problem_solving", "root_cause_analysis", "decision_making", "research_plan"]
    review = next(t for t in listed["templates"] if t["template_id"] == "code_review")
    assert review["source"] == "user"
    assert review["file"].endswith("code_review.yaml")
    assert [s["title"] for s in review["steps"]] == ["Understand the goal", "Read the tests", "Decide"]
    assert listed["invalid_templates"] == []
    assert listed["templates_folder"].endswith("templates")
    created = await ok(client, "create_session", name="PR 12", template_id="code_review", session_id="pr")
    assert created["session"]["total_thoughts"] == 3
    assert "Understand the goal" in created["message"]
    first = await ok(client, "sequential_thinking", **thought(1, 3, "It adds search", session_id="pr"))
    assert first["next_step"] == {
        "index": 2,
        "title": "Read the tests",
        "guidance": "Do they fail without the change?",
    }
    resumed = await ok(client, "resume_session", session_id="pr")
    assert resumed["next_step"]["title"] == "Read the tests"


async def test_json_template_in_chinese_and_a_configured_folder(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    custom = hostd_data_dir / "my-templates"
    custom.mkdir(parents=True)
    template = {
        "template_id": "retro",
        "name": {"en": "Retro", "zh": "复盘"},
        "steps": [{"title": "好", "guidance": "什么做得好"}],
    }
    (custom / "anything.json").write_text(json.dumps(template, ensure_ascii=False), encoding="utf-8")
    settings = {PLUGIN: {"templates_dir": str(custom)}}
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh"), settings=settings
    ) as zh:
        listed = await ok(zh, "list_templates")
        retro = next(t for t in listed["templates"] if t["template_id"] == "retro")
        assert retro["name"] == "复盘"
        assert listed["templates_folder"] == str(custom)
        await ok(zh, "create_session", name="复盘", template_id="retro")


@pytest.mark.parametrize(
    ("file_name", "content", "field", "words"),
    [
        ("broken.yaml", "name: [unclosed\nsteps: -", "(file)", "YAML"),
        ("broken.json", '{"name": "x", "steps": [', "(file)", "JSON"),
        ("nan.json", '{"name": "x", "steps": [{"title": "a", "guidance": NaN}]}', "(file)", "JSON"),
        ("list.yaml", "- just\n- a list\n", "(root)", "mapping"),
        ("nosteps.yaml", "name: No steps\n", "steps", "missing"),
        ("notitle.yaml", "name: x\nsteps:\n  - guidance: g\n", "steps.0.title", "missing"),
        ("emptytitle.yaml", "name: x\nsteps:\n  - {title: '', guidance: g}\n", "steps.0.title", "at least"),
        ("extra.yaml", "name: x\ncolour: red\nsteps:\n  - {title: t, guidance: g}\n", "colour", "unknown"),
        (
            "badid.yaml",
            "template_id: 'a b'\nname: x\nsteps:\n  - {title: t, guidance: g}\n",
            "template_id",
            "",
        ),
        ("bad id.yaml", "name: x\nsteps:\n  - {title: t, guidance: g}\n", "template_id", "not a valid id"),
        ("alias.yaml", "a: &x [1, 2]\nname: x\nsteps: *x\n", "(file)", "aliases"),
        ("binary.yaml", "\udcff", "(file)", "UTF-8"),
        ("huge.yaml", "name: x\nsteps:\n" + "  - {title: t, guidance: g}\n" * 4000, "(file)", "KiB"),
        (
            "problem_solving.yaml",
            "name: mine\nsteps:\n  - {title: t, guidance: g}\n",
            "template_id",
            "built-in",
        ),
    ],
)
async def test_bad_template_files_are_named_with_their_field(
    client: Client, hostd_data_dir: Path, file_name: str, content: str, field: str, words: str
) -> None:
    path = folder(hostd_data_dir) / file_name
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    (folder(hostd_data_dir) / "good.yaml").write_text(REVIEW_YAML, encoding="utf-8")
    listed = await ok(client, "list_templates")
    assert [problem["file"] for problem in listed["invalid_templates"]] == [str(path)]
    problem = listed["invalid_templates"][0]
    assert problem["field"] == field, problem
    assert words in problem["problem"], problem
    assert "1 template file(s) left out" in listed["message"]
    assert "good" in [t["template_id"] for t in listed["templates"]]  # a broken file hides no other
    builtin = next(t for t in listed["templates"] if t["template_id"] == "problem_solving")
    assert builtin["source"] == "built_in"
    assert builtin["steps"][0]["title"] == "Define the problem"
    template_id = path.stem if field != "template_id" or "built-in" in words else None
    if template_id and " " not in template_id and template_id != "problem_solving":
        refused = await fails(client, "create_session", "INVALID_ARGUMENT", name="x", template_id=template_id)
        assert refused["error"]["details"] == {"argument": "template_id", "file": str(path), "field": field}
        assert file_name in refused["message"]


async def test_a_duplicate_id_keeps_the_first_file(client: Client, hostd_data_dir: Path) -> None:
    (folder(hostd_data_dir) / "a.yaml").write_text("template_id: same\n" + REVIEW_YAML, encoding="utf-8")
    (folder(hostd_data_dir) / "b.yaml").write_text("template_id: same\n" + REVIEW_YAML, encoding="utf-8")
    listed = await ok(client, "list_templates")
    same = [t for t in listed["templates"] if t["template_id"] == "same"]
    assert len(same) == 1
    assert same[0]["file"].endswith("a.yaml")
    assert listed["invalid_templates"][0]["file"].endswith("b.yaml")
    assert "already defined" in listed["invalid_templates"][0]["problem"]


async def test_edits_are_seen_and_a_removed_template_ends_its_steps(
    client: Client, hostd_data_dir: Path
) -> None:
    path = folder(hostd_data_dir) / "live.yaml"
    path.write_text(REVIEW_YAML, encoding="utf-8")
    await ok(client, "create_session", name="s", template_id="live", session_id="live")
    path.write_text(REVIEW_YAML.replace("Read the tests", "Run the tests"), encoding="utf-8")
    answer = await ok(client, "sequential_thinking", **thought(1, 3, session_id="live"))
    assert answer["next_step"]["title"] == "Run the tests"
    path.unlink()
    answer = await ok(client, "sequential_thinking", **thought(2, 3, session_id="live"))
    assert answer["next_step"] is None  # the session goes on, without guidance
    await fails(client, "create_session", "INVALID_ARGUMENT", name="s", template_id="live")


async def test_problems_in_chinese_leak_no_english(hostd_data_dir: Path, hostd_roots: Path) -> None:
    files = {
        "a.yaml": "name: [unclosed\nsteps: -",
        "b.json": '{"name": "x", "steps": [',
        "c.yaml": "name: x\nsteps:\n  - {title: '', guidance: g}\n",
        "d.yaml": "name: x\nsteps:\n  - {title: 5, guidance: g}\n",
        "e.yaml": "name: x\ncolour: red\nsteps:\n  - {title: t, guidance: g}\n",
        "f.yaml": "name: x\nsteps: []\n",
        "problem_solving.yaml": "name: x\nsteps:\n  - {title: t, guidance: g}\n",
        "g.yaml": "name: x\nsteps:\n" + "  - {title: t, guidance: g}\n" * 4000,
    }
    for name, content in files.items():
        (folder(hostd_data_dir) / name).write_text(content, encoding="utf-8")
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        listed = await ok(zh, "list_templates")
        refused = await fails(zh, "create_session", "INVALID_ARGUMENT", name="x", template_id="a")
    problems = listed["invalid_templates"]
    assert len(problems) == len(files)
    for problem in problems:
        # Names the file and the field; says the rest in Chinese (format names and ids aside).
        leftover = re.sub(r"YAML|JSON|KiB|problem_solving|en|zh", "", problem["problem"])
        assert not re.search(r"[A-Za-z]{2,}", leftover), problem
    assert re.search(
        r"第 \d+ 行第 \d+ 列", next(p for p in problems if p["file"].endswith("a.yaml"))["problem"]
    )
    message = refused["message"].replace(refused["error"]["details"]["file"], "")
    assert not re.search(r"[A-Za-z]{2,}", re.sub(r"YAML|file", "", message)), message
