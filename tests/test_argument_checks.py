"""The host checks every argument of every installed tool, from the tool's own schema.

A plugin declares its arguments' bounds (``Field(ge=..., max_length=...)``, ``Literal[...]``,
required or not); the host turns a value outside them into INVALID_ARGUMENT naming the
argument, in the host's language, before the tool runs. That is checked here once for every
tool of every installed plugin, so the plugins' suites keep only the checks a plugin makes
itself (a blank title, a cursor, a query with no word, ...).
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.core.plugins import installed_plugins
from hostd.core.tools import ArgumentError, ToolSpec, validate_arguments
from hostd_testing.fuzz import valid_value

UNKNOWN = "not_an_argument_of_any_tool"
CHINESE = re.compile(r"[\u4e00-\u9fff]")
#: Texts few patterns accept: the first one an argument's pattern refuses is sent to it.
PATTERN_MISSES = ["two words", "../x", "a\x00b", "-"]


def _specs() -> dict[str, ToolSpec]:
    """Every installed plugin's tools, from one host that loads them all (never started: the
    arguments are checked before a tool runs, so no store is opened)."""
    with tempfile.TemporaryDirectory() as data_dir:
        loaded = config_from_mapping({}, data_dir=Path(data_dir))
        return dict(Host(loaded).tools)


SPECS = _specs()


def _resolved(prop: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The argument's own schema, a shared definition read through and ``X | None`` unwrapped."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = {**schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}), **prop}
    options = [o for o in prop.get("anyOf", []) if o.get("type") != "null"]
    if len(options) == 1:
        return {**prop, **_resolved(options[0], schema)}
    return prop


def _bad_values(prop: dict[str, Any]) -> Iterator[tuple[str, Any, set[str]]]:
    """(what is wrong, a value, the problems pydantic may name) for each bound the schema
    declares, and a value of the wrong type."""
    kind = prop.get("type")
    if "enum" in prop:
        yield "not one of the choices", "no-such-choice", {"literal_error", "enum"}
        return
    if kind == "integer":
        yield "not a whole number", "many", {"int_parsing"}
    if kind == "integer" and "maximum" in prop:
        yield "over the maximum", prop["maximum"] + 1, {"less_than_equal"}
    if kind == "integer" and "minimum" in prop:
        yield "under the minimum", prop["minimum"] - 1, {"greater_than_equal"}
    if kind == "string":
        yield "not a string", ["x"], {"string_type"}
    if kind == "string" and "maxLength" in prop:
        yield "too long", "x" * (prop["maxLength"] + 1), {"string_too_long"}
    if kind == "string" and prop.get("minLength", 0) > 0:
        yield "too short", "", {"string_too_short"}
    if kind == "string" and "pattern" in prop:
        unmatched = [text for text in PATTERN_MISSES if not re.search(prop["pattern"], text)]
        if unmatched:
            yield "not matching its pattern", unmatched[0], {"string_pattern_mismatch"}
    if kind == "boolean":
        yield "not a boolean", "maybe", {"bool_parsing"}
    if kind == "array":
        yield "not a list", "not-a-list", {"list_type"}
    if kind == "array" and prop.get("minItems", 0) > 0:
        yield "too few items", [], {"too_short"}
    if kind == "array" and "maxItems" in prop:
        item = valid_value(prop.get("items", {}), prop, random.Random(0))
        yield "too many items", [item] * (prop["maxItems"] + 1), {"too_long"}


def _field_errors(spec: ToolSpec, arguments: dict[str, Any]) -> list[str]:
    """The arguments ``arguments`` gets wrong (a check across arguments names none)."""
    try:
        validate_arguments(spec, arguments, "en")
    except ArgumentError as error:
        return [e["argument"] for e in error.details["errors"] if e["argument"]]
    return []


def _base(spec: ToolSpec) -> dict[str, Any]:
    """Values for the tool's required arguments that its field checks accept, so that the one
    broken argument is the first (and only) one named."""
    schema = spec.input_schema
    required = schema.get("required", [])
    for seed in range(200):
        rng = random.Random(seed)
        base = {name: valid_value(schema["properties"][name], schema, rng) for name in required}
        if not _field_errors(spec, base):
            return base
    raise AssertionError(f"{spec.name}: no generated values pass its field checks")


def _cases() -> Iterator[Any]:
    for name, spec in sorted(SPECS.items()):
        schema = spec.input_schema
        for argument in schema.get("required", []):
            yield pytest.param(name, argument, "missing", None, {"missing"}, id=f"{name}-{argument}-missing")
        yield pytest.param(name, UNKNOWN, "unknown", 1, {"extra_forbidden"}, id=f"{name}-unknown")
        for argument, prop in schema.get("properties", {}).items():
            for what, value, problems in _bad_values(_resolved(prop, schema)):
                yield pytest.param(name, argument, what, value, problems, id=f"{name}-{argument}-{what}")


def test_every_installed_plugin_has_tools_here() -> None:
    """The cases below cover the plugins this run has installed, not a subset of them."""
    assert {spec.plugin for spec in SPECS.values()} == set(installed_plugins())


@pytest.mark.parametrize(("tool", "argument", "what", "value", "problems"), list(_cases()))
def test_an_argument_outside_its_schema_is_refused_naming_it(
    tool: str, argument: str, what: str, value: Any, problems: set[str]
) -> None:
    spec = SPECS[tool]
    arguments = _base(spec)
    if what == "missing":
        del arguments[argument]
    else:
        arguments[argument] = value
    answers: dict[str, ArgumentError] = {}
    for language in ("en", "zh"):
        with pytest.raises(ArgumentError) as refused:
            validate_arguments(spec, arguments, language)
        answers[language] = refused.value
    en, zh = answers["en"], answers["zh"]
    assert en.details["argument"] == argument
    assert en.details["problem"] in problems
    assert f"'{argument}'" in en.message
    assert en.hint
    assert zh.details["argument"] == argument
    assert f"'{argument}'" in zh.message
    assert CHINESE.search(zh.details["errors"][0]["message"])
    assert CHINESE.search(zh.hint)


@pytest.mark.parametrize("tool", sorted(SPECS))
def test_a_choice_outside_the_list_is_answered_with_the_list(tool: str) -> None:
    """An argument with fixed choices: the hint lists every one of them."""
    spec = SPECS[tool]
    schema = spec.input_schema
    for argument, prop in schema.get("properties", {}).items():
        choices = _resolved(prop, schema).get("enum")
        if not choices:
            continue
        with pytest.raises(ArgumentError) as refused:
            validate_arguments(spec, {**_base(spec), argument: "no-such-choice"}, "en")
        listed = [json.dumps(choice, ensure_ascii=False) for choice in choices]
        missing = [choice for choice in listed if choice not in refused.value.hint]
        assert missing == [], (argument, refused.value.hint)
