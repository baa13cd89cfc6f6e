"""What the tool list and the listing answers cost a model, in o200k_base tokens.

Every turn, a client hands the model each tool's name, description and input schema; and a
search or listing answer is read whole. This benchmark builds hosts in-process (no server
needed: the list is the same one ``tools/list`` serves) and prints, per profile:

- the characters and tokens of names + descriptions + input schemas, serialised compactly as
  the SDK sends them (and, for comparison with the issue's first measurement, with Python's
  default ``json.dumps`` spacing);
- the bytes of the whole ``tools/list`` result (output schemas and annotations included);

the whole ``tools/list`` result before and after it was lightened (issue 34), bytes and tokens,
with "before" rebuilt in the same run from what the host keeps (each tool's whole output
schema, titles, defaults and descriptions included; every tool carrying its plugin's icon;
the title repeated in the annotations), parts apart;

and the tokens of the text block of a default answer (no optional arguments) of every search
and listing tool, on seeded data (the 2,100 memories of ``bench/memory_eval``, 40 tasks,
25 thinking sessions). Targets (issue 25): the default profile (every tool) at most 8,000
tokens, the ``core`` tiers of all plugins together at most 3,000, a default ``search_memory``
answer at most 1,000.

Tokens are counted with ``bpe-openai`` (o200k_base, vocabulary shipped in the wheel: no
download). Run: ``.venv/bin/python bench/bench_tool_list.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import bpe_openai
from benchlib import BENCH_DIR, load_module, table, write_section
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.protocol.adapters import envelope_result, svg_icon, tool_definitions
from mcp import types

PLUGINS = ["summary-writer", "wechat", "memory", "deep-thinking", "tasks"]
TOOL_LIST_TARGET = 8_000
CORE_TARGET = 3_000
SEARCH_ANSWER_TARGET = 1_000
LIGHT_TARGET_BYTES = 80_000
ENCODING = bpe_openai.get_encoding("o200k_base")


def tokens(text: str) -> int:
    return len(ENCODING.encode(text))


def profiles() -> dict[str, dict[str, Any]]:
    """Profile name -> profile section: every tool, every core tier, each plugin alone (all / core)."""
    found: dict[str, dict[str, Any]] = {
        "default (every tool)": {},
        "core tiers of every plugin": {"tools": {name: {"tier": "core"} for name in PLUGINS}},
    }
    for name in PLUGINS:
        found[f"{name}: all"] = {"plugins": [name]}
        found[f"{name}: core"] = {"plugins": [name], "tools": {name: {"tier": "core"}}}
    return found


def host_for(profile: dict[str, Any], data_dir: Path) -> Host:
    return Host(config_from_mapping({"profiles": {"default": profile}}, data_dir=data_dir))


def measure_list(host: Host) -> dict[str, int]:
    tools = tool_definitions(host)
    compact = spaced = characters = 0
    for tool in tools:
        shown = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        text = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
        characters += len(text)
        compact += tokens(text)
        spaced += tokens(json.dumps(shown, ensure_ascii=False))
    whole = types.ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)
    return {
        "tools": len(tools),
        "characters": characters,
        "tokens": compact,
        "spaced": spaced,
        "bytes": len(whole.encode()),
    }


def unlightened_definitions(host: Host) -> list[types.Tool]:
    """``tools/list`` as it was before issue 34: the host's whole output schemas, the plugin's
    icon on every tool, the title in the annotations too (the input schemas were already listed
    lighter, issue 25)."""
    icons = {plugin: [svg_icon(svg)] for plugin, svg in host.icons.items()}
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.listed_schema,
            output_schema=spec.output_schema,
            icons=icons.get(spec.plugin),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.annotations["readOnlyHint"],
                destructive_hint=spec.annotations["destructiveHint"],
                idempotent_hint=spec.annotations["idempotentHint"],
                open_world_hint=spec.annotations["openWorldHint"],
            ),
        )
        for spec in host.tools.values()
    ]


def list_parts(tools: list[types.Tool]) -> dict[str, tuple[int, int]]:
    """Bytes and o200k tokens of the whole ``tools/list`` result and of its parts, compact JSON."""

    def cost(value: Any) -> tuple[int, int]:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode()), tokens(text)

    whole = types.ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)
    dumped = [tool.model_dump(by_alias=True, exclude_none=True) for tool in tools]
    return {
        "whole tools/list": (len(whole.encode()), tokens(whole)),
        "output schemas": cost([tool.get("outputSchema") for tool in dumped]),
        "icons": cost([tool.get("icons") for tool in dumped if tool.get("icons")]),
        "input schemas": cost([tool["inputSchema"] for tool in dumped]),
        "annotations": cost([tool.get("annotations") for tool in dumped]),
    }


def light_section(data_dir: Path) -> str:
    """Before/after of the default profile's ``tools/list`` (every tool), measured in this run."""
    host = host_for({}, data_dir)
    before, after = list_parts(unlightened_definitions(host)), list_parts(tool_definitions(host))
    rows: list[list[object]] = []
    for part in before:
        (b_bytes, b_tokens), (a_bytes, a_tokens) = before[part], after[part]
        rows.append(
            [
                part,
                f"{b_bytes:,}",
                f"{a_bytes:,}",
                f"{a_bytes / b_bytes:.2f}" if b_bytes else "-",
                f"{b_tokens:,}",
                f"{a_tokens:,}",
                f"{a_tokens / b_tokens:.2f}" if b_tokens else "-",
            ]
        )
    whole = after["whole tools/list"][0]
    verdict = (
        f"default profile's tools/list after: {whole:,} bytes (target <= {LIGHT_TARGET_BYTES:,}: "
        f"{'met' if whole <= LIGHT_TARGET_BYTES else 'MISSED'}); every output schema is kept and "
        "accepts every answer the host's own does, naming every field"
    )
    return "\n".join(
        [
            f"The default profile's `tools/list` result ({len(host.tools)} tools, every plugin), "
            "before (rebuilt in this run: whole output schemas, the plugin's icon on each tool, the "
            "title in the annotations too) and after (each output schema listed as the answer's shape: "
            "annotations gone, every field of a record named, fields that are not records left open, "
            "the error envelope an object; each plugin's icon once); compact JSON as sent, tokens "
            "o200k_base.",
            "",
            table(
                ["part", "bytes before", "bytes after", "ratio", "tokens before", "tokens after", "ratio"],
                rows,
            ),
            "",
            f"- {verdict}",
        ]
    )


def seed_and_answer(data_dir: Path) -> list[list[object]]:
    """Seed every plugin, then call each search and listing tool with its defaults."""
    score = load_module(BENCH_DIR / "memory_eval" / "score.py")
    memories, queries = score.load()
    host = host_for({}, data_dir)
    host.startup()

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        envelope, is_error = await host.call(name, arguments)
        assert not is_error, (name, envelope)
        return envelope

    async def run() -> list[list[object]]:
        await call("import_memories", {"data": score.import_document(memories)})
        uri = memories[0]["uri"]
        for step in range(3):
            await call("update_memory", {"uri": uri, "content": f"note {step}", "append": True})
        for number in range(40):
            await call(
                "create_task",
                {
                    "title": f"Migrate service {number} to the new cache",
                    "description": "Move reads to Redis, keep the database as the source of truth.",
                    "priority": ["P0", "P1", "P2"][number % 3],
                    "labels": ["backend", f"team-{number % 4}"],
                },
            )
        for number in range(25):
            for thought in range(1, 5):
                await call(
                    "sequential_thinking",
                    {
                        "session_id": f"design-{number}",
                        "thought": f"Step {thought}: weigh cache invalidation for service {number}.",
                        "thoughtNumber": thought,
                        "totalThoughts": 4,
                        "nextThoughtNeeded": thought < 4,
                    },
                )
        defaults: list[tuple[str, dict[str, Any]]] = [
            ("search_memory", {"query": queries[0]["query"]}),
            ("list_memories", {}),
            ("get_memory_versions", {"uri": uri}),
            ("list_rollbacks", {"uri": uri}),
            ("list_tasks", {}),
            ("list_sessions", {}),
            ("search_thoughts", {"query": "cache"}),
            ("list_templates", {}),
        ]
        rows: list[list[object]] = []
        for name, arguments in defaults:
            envelope = await call(name, arguments)
            text = envelope_result(envelope, False).content[0]
            assert isinstance(text, types.TextContent)
            items = max((len(v) for v in envelope.values() if isinstance(v, list)), default=0)
            rows.append([f"`{name}`", json.dumps(arguments, ensure_ascii=False), items, tokens(text.text)])
        return rows

    try:
        return anyio.run(run)
    finally:
        host.shutdown()


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        measured = {name: measure_list(host_for(profile, data_dir)) for name, profile in profiles().items()}
        light = light_section(data_dir / "light")
        answers = seed_and_answer(data_dir / "answers")
    every, core = measured["default (every tool)"], measured["core tiers of every plugin"]
    rows = [
        [name, m["tools"], f"{m['characters']:,}", f"{m['tokens']:,}", f"{m['spaced']:,}", f"{m['bytes']:,}"]
        for name, m in measured.items()
    ]
    search = next(row for row in answers if row[0] == "`search_memory`")
    verdicts = [
        f"default profile: {every['tokens']:,} tokens (target <= {TOOL_LIST_TARGET:,}: "
        f"{'met' if every['tokens'] <= TOOL_LIST_TARGET else 'MISSED'})",
        f"core tiers together: {core['tokens']:,} tokens (target <= {CORE_TARGET:,}: "
        f"{'met' if core['tokens'] <= CORE_TARGET else 'MISSED'})",
        f"default search_memory answer: {search[3]:,} tokens (target <= {SEARCH_ANSWER_TARGET:,}: "
        f"{'met' if int(str(search[3])) <= SEARCH_ANSWER_TARGET else 'MISSED'})",
    ]
    body = "\n".join(
        [
            "Names + descriptions + input schemas as a model is given them, per profile "
            "(tokens: o200k_base via bpe-openai; compact JSON as sent, and with `json.dumps`' default "
            "spacing as the issue first measured: 14,933 tokens, 45 tools, before this work), and the "
            "bytes of the whole `tools/list` result (with output schemas).",
            "",
            table(
                ["profile", "tools", "characters", "tokens", "tokens (spaced JSON)", "tools/list bytes"],
                rows,
            ),
            "",
            "Text block of a default answer (no optional arguments) of each search and listing tool, "
            "2,100 memories, 40 tasks, 25 sessions:",
            "",
            table(["tool", "arguments", "items", "tokens"], answers),
            "",
            *[f"- {line}" for line in verdicts],
        ]
    )
    title = "Tool list and answers: what they cost a model"
    write_section("tool-list", title, body, packages=("bpe-openai",))
    light_title = "tools/list before and after lightening"
    write_section("tool-list-light", light_title, light, packages=("bpe-openai",))


if __name__ == "__main__":
    main()
