"""Registration, schemas in tools/list, the envelope, argument errors, failures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hostd.core.arguments import describe_valid
from hostd.core.tools import ArgumentError, build_tool_spec, listed_input_schema, validate_arguments
from hostd_testing import envelope_of, in_memory_client
from hostd_testing.calls import envelope_error, envelope_ok
from pydantic import Field
from typing_extensions import TypeAliasType

from hostd import RegisterTool, Text, ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio


def client(data_dir: Path, probe: object, **kwargs):  # type: ignore[no-untyped-def]
    return in_memory_client(["probe"], data_dir=data_dir, extra_plugins={"probe": probe}, **kwargs)


@pytest.mark.smoke
async def test_tools_list_carries_complete_schemas(hostd_data_dir: Path, probe: object) -> None:
    async with client(hostd_data_dir, probe) as c:
        tools = {tool.name: tool for tool in (await c.list_tools()).tools}
    assert set(tools) == {"echo", "fail", "where", "ask", "count_slowly", "noisy"}
    echo = tools["echo"]
    props = echo.input_schema["properties"]
    assert echo.input_schema["required"] == ["text"]
    assert props["times"] == {
        "default": 1,
        "description": "How many times to repeat it",
        "maximum": 5,
        "minimum": 1,
        "type": "integer",
    }
    assert props["style"]["enum"] == ["plain", "upper"]
    assert props["style"]["default"] == "plain"
    # A guard no model comes near is left out of the listing; the host still enforces it.
    assert "maxLength" not in props["text"]
    assert echo.input_schema["additionalProperties"] is False
    for tool in tools.values():
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema is not None
        assert {"status", "message", "metadata"} <= set(tool.output_schema["required"])
    assert set(echo.output_schema["properties"]) >= {"text", "times", "greeting", "status", "message"}
    assert echo.annotations.read_only_hint is True
    assert echo.annotations.destructive_hint is False
    assert tools["fail"].annotations.read_only_hint is False


@pytest.mark.smoke
async def test_success_envelope_is_structured_and_text(hostd_data_dir: Path, probe: object) -> None:
    # The language is pinned: left to the locale, either language would be a right answer.
    async with client(hostd_data_dir, probe, config={"language": "en"}) as c:
        result = await c.call_tool("echo", {"text": "ab", "times": 2, "style": "upper"})
    assert result.is_error is False
    envelope = envelope_of(result)
    assert json.loads(result.content[0].text) == envelope
    assert envelope == envelope_ok(message="Echoed 2 time(s).", text="ABAB", times=2, greeting="hello")


async def test_messages_follow_the_configured_language(hostd_data_dir: Path, probe: object) -> None:
    async with client(hostd_data_dir, probe, config={"language": "zh"}) as c:
        ok = envelope_of(await c.call_tool("echo", {"text": "a"}))
        bad = envelope_of(await c.call_tool("echo", {}))
    assert ok["message"] == "已回显 1 次。"
    assert bad["error"]["message"] == "缺少必填参数 'text'。"
    async with client(hostd_data_dir, probe, config={"language": "en"}) as c:
        assert envelope_of(await c.call_tool("echo", {"text": "a"}))["message"] == "Echoed 1 time(s)."


@pytest.mark.parametrize(
    ("arguments", "argument", "problem", "hint_part"),
    [
        ({}, "text", "missing", "string"),
        ({"text": ""}, "text", "string_too_short", "at least 1 characters"),
        ({"text": "a", "times": 9}, "times", "less_than_equal", "<= 5"),
        ({"text": "a", "times": "many"}, "times", "int_parsing", "integer"),
        ({"text": "a", "style": "bold"}, "style", "literal_error", '"plain", "upper"'),
        ({"text": ["a"]}, "text", "string_type", "string"),
        ({"text": "a", "colour": "red"}, "colour", "extra_forbidden", "valid arguments: style, text, times"),
    ],
)
async def test_argument_errors_are_envelopes_naming_the_argument(
    hostd_data_dir: Path,
    probe: object,
    arguments: dict[str, Any],
    argument: str,
    problem: str,
    hint_part: str,
) -> None:
    async with client(hostd_data_dir, probe, config={"language": "en"}) as c:
        result = await c.call_tool("echo", arguments)
    assert result.is_error is True
    envelope = envelope_of(result)
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["argument"] == argument
    assert envelope["error"]["details"]["problem"] == problem
    assert f"'{argument}'" in envelope["error"]["message"]
    assert hint_part in envelope["error"]["hint"]
    assert "validation error" not in envelope["message"].lower()


async def test_numbers_and_booleans_sent_as_strings_are_accepted(hostd_data_dir: Path, probe: object) -> None:
    async with client(hostd_data_dir, probe, config={"language": "en"}) as c:
        envelope = envelope_of(await c.call_tool("echo", {"text": "x", "times": "3"}))
    assert envelope == envelope_ok(message="Echoed 3 time(s).", text="xxx", times=3, greeting="hello")


async def test_tool_error_keeps_code_hint_and_details(hostd_data_dir: Path, probe: object) -> None:
    async with client(hostd_data_dir, probe) as c:
        result = await c.call_tool("fail", {"kind": "tool_error"})
    assert result.is_error
    assert envelope_of(result) == envelope_error(
        "CONFLICT", "The probe conflicts on purpose.", hint="Pick another kind.", details={"k": 1}
    )


async def test_unexpected_exception_is_internal_without_leaking(
    hostd_data_dir: Path, probe: object, caplog: pytest.LogCaptureFixture
) -> None:
    async with client(hostd_data_dir, probe) as c:
        crash = await c.call_tool("fail", {"kind": "crash"})
        wrong = await c.call_tool("fail", {"kind": "wrong_output"})
        after = await c.call_tool("echo", {"text": "still alive"})
    for result in (crash, wrong):
        envelope = envelope_of(result)
        assert envelope["error"]["code"] == "INTERNAL"
        assert "secret" not in json.dumps(envelope)
    assert "secret internal detail" in caplog.text  # the traceback goes to the log (stderr)
    assert envelope_of(after)["text"] == "still alive"


async def test_file_system_errors_map_to_their_codes(hostd_data_dir: Path, probe: object) -> None:
    async with client(hostd_data_dir, probe) as c:
        envelope = envelope_of(await c.call_tool("fail", {"kind": "fs_error"}))
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    assert envelope["error"]["details"]["reason"] == "OUTSIDE_ROOTS"
    assert envelope["error"]["hint"]


async def test_unknown_tool_is_a_protocol_error(hostd_data_dir: Path, probe: object) -> None:
    from mcp.shared.exceptions import MCPError

    async with client(hostd_data_dir, probe) as c:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("no_such_tool", {})
        assert envelope_of(await c.call_tool("echo", {"text": "ok"}))["text"] == "ok"
    assert "no_such_tool" in caught.value.message
    assert "echo" in caught.value.message


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_both_protocol_eras_in_process(hostd_data_dir: Path, probe: object, mode: str) -> None:
    async with client(hostd_data_dir, probe, mode=mode) as c:
        assert envelope_of(await c.call_tool("echo", {"text": "era"}))["text"] == "era"


async def test_fuzz_check_over_the_probe_tools(tmp_path: Path, probe: object) -> None:
    from hostd_testing import fuzz_tools

    async with client(tmp_path / "d", probe, config={"allowed_roots": [str(tmp_path)]}) as c:
        # 'fail' raises on purpose (its crash kind is INTERNAL by design); every other tool must hold.
        report = await fuzz_tools(c, skip=frozenset({"fail"}))
    assert report.calls > 80  # about 17 calls for each of the five fuzzed tools
    assert not report.failures, report.failures
    assert report.codes.get("INVALID_ARGUMENT", 0) > 0
    assert report.codes.get("OK", 0) > 0


async def test_success_and_error_envelopes_both_fit_the_output_schema(
    hostd_data_dir: Path, probe: object
) -> None:
    import jsonschema

    async with client(hostd_data_dir, probe) as c:
        schema = {tool.name: tool.output_schema for tool in (await c.list_tools()).tools}["echo"]
        ok = await c.call_tool("echo", {"text": "fits"})
        bad = await c.call_tool("echo", {"text": "x", "times": 99})
    assert bad.is_error
    assert not ok.is_error
    for result in (ok, bad):
        jsonschema.validate(result.structured_content, schema)  # clients may validate errors too


def test_an_optional_object_is_one_nullable_type_in_the_output_schema() -> None:
    """Clients validate every answer: ``null`` checked against ``anyOf`` builds a failure first."""
    import jsonschema
    from hostd.core.tools import output_schema_of

    class Output(ToolOutput):
        counts: Annotated[dict[str, int] | None, Field(description="Counts per kind")] = None
        mode: Annotated[Literal["a", "b"] | None, Field(description="An enum keeps anyOf")] = None

    schema = output_schema_of(Output)
    properties = schema["properties"]
    assert properties["counts"] == {
        "type": ["object", "null"],
        "additionalProperties": {"type": "integer"},
        "description": "Counts per kind",
        "default": None,
    }
    assert "anyOf" in properties["mode"]  # null is not in the enum: merging would refuse it
    envelope = {"status": "success", "message": "m", "metadata": {}}
    for fine in ({"counts": None}, {"counts": {"x": 1}}, {"mode": None}, {"mode": "a"}):
        jsonschema.validate({**envelope, **fine}, schema)
    for wrong in ({"counts": {"x": "one"}}, {"counts": "text"}, {"mode": "c"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**envelope, **wrong}, schema)


@pytest.mark.parametrize(
    ("arguments", "message", "hint_part"),
    [
        ({"text": "a", "times": 9}, "参数 'times' 无效：必须小于或等于 5。", "整数 (>= 1, <= 5)"),
        (
            {"text": "a", "style": "bold"},
            "参数 'style' 无效：必须是以下之一：'plain' 或 'upper'。",
            "以下之一",
        ),
        ({"text": ""}, "参数 'text' 无效：长度至少为 1 个字符。", "至少 1 个字符"),
        ({"text": "a", "x": 1}, "未知参数 'x'。", "可用参数：style, text, times"),
    ],
)
async def test_argument_errors_speak_chinese_when_the_host_does(
    hostd_data_dir: Path, probe: object, arguments: dict[str, Any], message: str, hint_part: str
) -> None:
    async with client(hostd_data_dir, probe, config={"language": "zh"}) as c:
        envelope = envelope_of(await c.call_tool("echo", arguments))
    assert envelope["error"]["message"] == message
    assert hint_part in envelope["error"]["hint"]
    # No English leaks into a Chinese answer: the only Latin words are the argument names and values.
    words = set(re.findall(r"[A-Za-z]{3,}", envelope["error"]["message"] + envelope["error"]["hint"]))
    assert words <= {"text", "times", "style", "plain", "upper"}, words


Stamp = TypeAliasType("Stamp", Annotated[str, Field(description="ISO 8601", max_length=30)])
Code = TypeAliasType("Code", Annotated[str, Field(description="e.g. ab-1", pattern=r"^[a-z]+-\d$")])


class Picked(ToolOutput):
    n: int


def pick(
    after: Annotated[Stamp | None, Field(description="After")] = None,
    before: Annotated[Stamp | None, Field(description="Before")] = None,
    code: Annotated[Code | None, Field(description="Only this code")] = None,
    note: Annotated[str | None, Field(description="A note", max_length=5)] = None,
) -> Picked:
    """Pick."""
    return Picked(n=0)


def test_input_schemas_drop_what_a_model_does_not_need_and_share_named_types() -> None:
    spec = build_tool_spec(pick, plugin="p")
    assert spec.input_schema == {
        "$defs": {"Stamp": {"description": "ISO 8601", "maxLength": 30, "type": "string"}},
        "additionalProperties": False,
        "properties": {
            "after": {"$ref": "#/$defs/Stamp", "description": "After"},
            "before": {"$ref": "#/$defs/Stamp", "description": "Before"},
            # used once: written in place, both descriptions kept
            "code": {"description": "Only this code; e.g. ab-1", "pattern": r"^[a-z]+-\d$", "type": "string"},
            "note": {"description": "A note", "maxLength": 5, "type": "string"},
        },
        "type": "object",
    }
    # Leaving the null branch out of the schema does not refuse an explicit null.
    assert validate_arguments(spec, {"after": None, "note": None}, "en").model_dump()["after"] is None
    assert describe_valid(spec.input_schema, "after", "en") == (
        "'after' expects string (at most 30 characters): After"
    )


def test_the_listed_schema_drops_guards_and_empty_defaults_but_validation_keeps_them() -> None:
    schema: dict[str, Any] = {
        "$defs": {"Id": {"pattern": r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$", "type": "string"}},
        "properties": {
            # property names that are also keywords are names, not keywords
            "pattern": {"type": "string", "maxLength": 499, "pattern": r"^[^A-Za-z0-9_]+$"},
            "default": {"type": "array", "maxItems": 500, "default": [], "items": {"maxLength": 2_000_000}},
            "flag": {"type": "boolean", "default": False},
            "on": {"type": "boolean", "default": True},
            "count": {"type": "integer", "default": 0, "maximum": 100_000},
            "note": {"type": "string", "default": ""},
        },
        "type": "object",
    }
    assert listed_input_schema(schema) == {
        "$defs": {"Id": {"pattern": r"^[\w-][\w.-]{0,63}$", "type": "string"}},
        "properties": {
            "pattern": {"type": "string", "maxLength": 499, "pattern": r"^[^\w]+$"},
            "default": {"type": "array", "items": {}},
            "flag": {"type": "boolean"},
            "on": {"type": "boolean", "default": True},
            "count": {"type": "integer", "default": 0, "maximum": 100_000},
            "note": {"type": "string"},
        },
        "type": "object",
    }
    assert schema["properties"]["note"] == {"type": "string", "default": ""}, (
        "the whole schema is not changed"
    )


@pytest.mark.parametrize(
    "value",
    ["t-12", "a.b", "_x", "-", "x" * 64, "x" * 65, ".hidden", "", "é", "任务", "a b", "a\n", "ǅ", "K", "١"],
)
def test_the_listed_id_pattern_accepts_exactly_what_the_id_rule_does(value: str) -> None:
    """JSON Schema patterns are ECMA-262, where \\w is ASCII only: Python's re.ASCII is the same."""
    from hostd import ID_PATTERN

    listed = listed_input_schema({"pattern": ID_PATTERN})["pattern"]
    assert listed != ID_PATTERN
    assert bool(re.search(listed, value, re.ASCII)) == bool(re.search(ID_PATTERN, value))


async def test_a_bound_left_out_of_the_listing_is_still_enforced_and_named(
    hostd_data_dir: Path, probe: object
) -> None:
    spec = build_tool_spec(echo_like, plugin="p")
    assert "maxLength" not in spec.listed_schema["properties"]["text"]
    with pytest.raises(ArgumentError) as refused:
        validate_arguments(spec, {"text": "x" * 10_001}, "en")
    assert (
        "10000" in refused.value.message + refused.value.hint
        or "10,000" in refused.value.message + refused.value.hint
    )


def echo_like(text: Annotated[str, Field(description="Text", max_length=10_000)]) -> Picked:
    """Echo."""
    return Picked(n=len(text))


class Advice(ToolOutput):
    tip: Text = Field(description="What to do next")
    warning: Text | None = Field(default=None, description="What went wrong, if anything")
    notes: list[Text] = Field(default_factory=list, description="Remarks")


def advise(ctx: ToolContext[None]) -> Advice:
    """Answer with sentences the host writes in the caller's language."""
    return Advice(
        tip=Text(en="Rest.", zh="休息。"),
        notes=[Text(en="Drink water.", zh="喝水。"), Text.same("v1.2")],
    )


class AdvicePlugin:
    @hookimpl
    def hostd_register_tools(self, register: RegisterTool) -> None:
        register(advise, access="read")


@pytest.mark.parametrize(
    ("language", "tip", "notes"),
    [("en", "Rest.", ["Drink water.", "v1.2"]), ("zh", "休息。", ["喝水。", "v1.2"])],
)
async def test_output_fields_holding_text_are_written_in_the_callers_language(
    hostd_data_dir: Path, language: str, tip: str, notes: list[str]
) -> None:
    async with in_memory_client(
        ["advice"],
        data_dir=hostd_data_dir,
        extra_plugins={"advice": AdvicePlugin()},
        config={"language": language},
    ) as c:
        (tool,) = (await c.list_tools()).tools
        result = await c.call_tool("advise", {})
    assert envelope_of(result) == envelope_ok(tip=tip, warning=None, notes=notes)
    # The output schema says what the client receives: strings. The listed one keeps what decides
    # validity (tools/list drops annotations); the host's own keeps the descriptions.
    from hostd.core.tools import output_schema_of

    properties = (tool.output_schema or {})["properties"]
    assert properties["tip"] == {"type": "string"}
    assert properties["warning"] == {"type": ["string", "null"]}
    assert properties["notes"]["items"] == {"type": "string"}
    own = output_schema_of(Advice)["properties"]
    assert own["tip"] == {"type": "string", "description": "What to do next"}
    assert own["warning"] == {
        "type": ["string", "null"],
        "default": None,
        "description": "What went wrong, if anything",
    }
    assert own["notes"]["items"] == {"type": "string"}
