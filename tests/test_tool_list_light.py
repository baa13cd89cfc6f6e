"""The listed ``tools/list`` of every shipped plugin: each tool's output schema is there, as the
answer's shape (every field named), and accepts every answer the host's own schema accepts; real
answers (success and error) fit it; and the whole list stays within its byte budget, each plugin's
icon sent once."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.core.tools import listed_output_schema
from hostd.protocol.adapters import tool_definitions
from hostd_testing import served_client, write_config
from mcp import types
from pydantic import BaseModel, Field

from hostd import ToolOutput

pytestmark = pytest.mark.anyio

#: The default profile's whole ``tools/list`` result was 201,661 bytes before it was lightened
#: (output schemas as the host keeps them, the same icon on every tool, 48 tools); about 116 KB with
#: 52 tools once output schemas lost their annotations; about 78 KB with them listed as the
#: answer's shape (issue 34's goal: at most 80 KB, every output schema kept).
LIST_BUDGET = 80_000
#: Keywords no answer passes or fails by (``format`` only annotates in JSON Schema 2020-12's default).
ANNOTATIONS = {"title", "default", "description", "examples", "format"}


def every_tool_host(tmp_path: Path, plugins: list[str]) -> Host:
    config = {"profiles": {"default": {"plugins": plugins}}}
    return Host(config_from_mapping(config, data_dir=tmp_path / "data"))


def resolved(node: Any, definitions: dict[str, Any], depth: int = 0) -> Any:
    """``node`` with every ``$ref`` into ``definitions`` written in place (no schema here recurses)."""
    assert depth < 50, "a recursive definition"
    if isinstance(node, list):
        return [resolved(value, definitions, depth) for value in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        rest = {key: value for key, value in node.items() if key != "$ref"}
        return resolved({**definitions[name], **rest}, definitions, depth + 1)
    return {key: resolved(value, definitions, depth) for key, value in node.items() if key != "$defs"}


def normal(node: Any) -> Any:
    """One spelling of what a schema accepts: annotations dropped, a nullable type as ``anyOf`` with
    ``null``, an ``enum`` of strings with its ``type``, no ``additionalProperties: true``; property
    and definition names kept."""
    if isinstance(node, list):
        return [normal(value) for value in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS:
            continue
        named = key in ("properties", "patternProperties") and isinstance(value, dict)
        out[key] = {k: normal(v) for k, v in value.items()} if named else normal(value)
    if out.get("additionalProperties") is True:  # the same as saying nothing
        del out["additionalProperties"]
    enum = out.get("enum")
    if "type" not in out and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        out["type"] = "string"
    kind = out.get("type")
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        other = next(k for k in kind if k != "null")
        return {"anyOf": [{**out, "type": other}, {"type": "null"}]}
    return out


def test_every_listed_output_schema_accepts_what_the_hosts_does_and_names_every_field(
    tmp_path: Path, every_plugin: list[str]
) -> None:
    host = every_tool_host(tmp_path, every_plugin)
    listed = {tool.name: tool for tool in tool_definitions(host)}
    assert set(listed) == set(host.tools)
    assert len(listed) >= 45
    for name, spec in host.tools.items():
        schema = listed[name].output_schema
        assert schema is not None, f"{name} lost its output schema"
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["required"] == ["status", "message", "metadata"]
        assert not _keywords(schema) & ANNOTATIONS, name
        whole = normal(resolved(spec.output_schema, spec.output_schema.get("$defs", {})))
        light = normal(resolved(schema, schema.get("$defs", {})))
        assert_looser(light, whole, name)
        # Every field is named, but the error envelope's own (the same for every tool: an object).
        assert field_paths(light) == {p for p in field_paths(whole) if not p.startswith(".error.")}, name
        assert light["properties"]["error"] == {"type": "object"}, name
        for field, own in whole["properties"].items():
            if not field_paths(own) and "required" not in _keywords(own):  # a plain field: kept whole
                assert light["properties"][field] == own, (name, field)
        assert len(json.dumps(schema)) < len(json.dumps(spec.output_schema)), name


def assert_looser(light: Any, whole: Any, where: str) -> None:
    """``light`` is ``whole`` with keywords left out (or a part left open, ``{}``): every value the
    host's schema accepts, the listed one accepts too."""
    if light == {}:
        return
    if isinstance(light, dict):
        assert isinstance(whole, dict), (where, light, whole)
        assert set(light) <= set(whole), (where, light, whole)
        for key, value in light.items():
            if key in ("properties", "patternProperties", "$defs"):
                assert set(value) == set(whole[key]), (where, key)
                for inner, part in value.items():
                    assert_looser(part, whole[key][inner], f"{where}.{inner}")
            elif key == "required":
                assert value == whole[key], where
            else:
                assert_looser(value, whole[key], f"{where}/{key}")
    elif isinstance(light, list) and isinstance(whole, list) and key_is_schema_list(light):
        assert len(light) == len(whole), where
        for index, (part, own) in enumerate(zip(light, whole, strict=True)):
            assert_looser(part, own, f"{where}[{index}]")
    else:
        assert light == whole, (where, light, whole)


def key_is_schema_list(value: list[Any]) -> bool:
    """A list of schemas (``anyOf``, ``oneOf``, ``allOf``, ``prefixItems``), not of values."""
    return bool(value) and all(isinstance(part, dict) for part in value)


def field_paths(schema: Any, at: str = "") -> set[str]:
    """Every field an answer can carry, as a dotted path (``[]`` for an array's items)."""
    if isinstance(schema, list):
        return {path for part in schema for path in field_paths(part, at)}
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            for field, part in value.items():
                found |= {f"{at}.{field}"} | field_paths(part, f"{at}.{field}")
        elif key == "items":
            found |= field_paths(value, f"{at}[]")
        elif key in ("anyOf", "oneOf", "allOf", "additionalProperties"):
            found |= field_paths(value, at)
    return found


def _keywords(schema: Any) -> set[str]:
    """Every keyword used in ``schema`` (property and definition names are not keywords)."""
    if isinstance(schema, list):
        return {key for value in schema for key in _keywords(value)}
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        named = key in ("properties", "patternProperties", "$defs") and isinstance(value, dict)
        for inner in value.values() if named else [value]:
            found |= _keywords(inner)
    return found


class Shared(BaseModel):
    """A shared thing."""

    label: str = Field(description="Its label")


class Once(BaseModel):
    count: int = 0


class Sample(ToolOutput):
    state: str = Field("open", json_schema_extra={"enum": ["open", "shut"]}, title="State")
    note: str | None = Field(None, description="A note")
    once: Once | None = None
    first: Shared
    second: list[Shared] = Field(default_factory=list)


def test_a_listed_output_schema_is_the_answers_shape() -> None:
    from hostd.core.tools import output_schema_of

    assert listed_output_schema(output_schema_of(Sample)) == {
        "type": "object",
        "properties": {
            "status": {"enum": ["success", "error"]},
            "message": {"type": "string"},
            "metadata": {"type": "object"},
            "error": {"type": "object"},
            "state": {"enum": ["open", "shut"]},
            "note": {"type": ["string", "null"]},
            "once": {"anyOf": [{"properties": {"count": {}}}, {"type": "null"}]},
            "first": {"$ref": "#/$defs/Shared"},
            "second": {"items": {"$ref": "#/$defs/Shared"}},
        },
        "required": ["status", "message", "metadata"],
        "$defs": {"Shared": {"properties": {"label": {}}}},
    }


async def test_real_answers_fit_the_listed_schemas(tmp_path: Path, every_plugin: list[str]) -> None:
    """Success and error answers of a real server validate against the listed schemas (the SDK
    client validates them too, and would refuse an answer that did not fit)."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create_memory", {"uri": "notes://light", "content": "a light list"}),
        ("read_memory", {"uri": "notes://light"}),
        ("list_memories", {}),
        ("search_memory", {"query": "light"}),
        ("create_task", {"title": "Lighten the list", "labels": ["mcp"]}),
        ("list_tasks", {}),
        ("get_next_task", {}),
        ("list_templates", {}),
        ("read_memory", {"uri": "notes://missing"}),
        ("get_task", {"task_id": "no-such-task"}),
    ]
    async with served_client(write_config(tmp_path, every_plugin)) as client:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        errors = 0
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert result.structured_content is not None, name
            jsonschema.validate(result.structured_content, schemas[name])
            errors += bool(result.is_error)
        task_id = None
        for name, arguments in calls:
            if name == "create_task":
                created = await client.call_tool(name, arguments)
                assert created.structured_content is not None
                task_id = created.structured_content["task"]["task_id"]
        assert task_id is not None
        got = await client.call_tool("get_task", {"task_id": task_id})
        assert not got.is_error
        assert got.structured_content is not None
        jsonschema.validate(got.structured_content, schemas["get_task"])
    assert errors == 2, "both error answers were errors, and fit"


def test_the_default_list_is_within_budget_and_sends_each_icon_once(
    tmp_path: Path, shipped_plugins: list[str]
) -> None:
    tools = tool_definitions(every_tool_host(tmp_path, shipped_plugins))
    whole = types.ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)
    assert len(whole.encode()) <= LIST_BUDGET, len(whole.encode())
    sources = [icon.src for tool in tools for icon in tool.icons or []]
    assert len(sources) == len(set(sources)) == len(shipped_plugins)
    for source in sources:
        markup = base64.b64decode(source.removeprefix("data:image/svg+xml;base64,"))
        assert whole.count(source) == 1
        assert markup.startswith(b"<svg")
