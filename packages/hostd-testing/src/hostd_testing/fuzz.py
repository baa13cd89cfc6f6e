"""The fuzz check: every tool, arguments made from its own ``inputSchema``, valid and invalid.

A tool passes when no call answers INTERNAL (or a protocol error), and the server still
answers afterwards. Generation is seeded, so a failure reproduces.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

HOSTILE_STRINGS = [
    "a",
    "notes/fuzz.md",
    "中文内容，测试。",
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "%2e%2e/%2e%2e/x.md",
    "/etc/shadow",
    "CON",
    "nul.md",
    "a\x00b",
    "\u3000\u200b",
    "😀🔥 emoji",
    '"]--> <script>alert(1)</script>',
    "' OR 1=1; DROP TABLE t; --",
    'NEAR(a b) OR "x" * ^',
    "{title}{date}",
    "file:///etc/passwd",
    "http://127.0.0.1:1/",
    "\r\n\t",
    "x" * 300,
]


@dataclass
class FuzzReport:
    calls: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(root.get("$defs", {}).get(ref.split("/")[-1], {}), root)
    return schema


def valid_value(schema: dict[str, Any], root: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value that fits ``schema`` as far as simple generation can tell."""
    schema = _resolve(schema, root)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        non_null = [o for o in options if _resolve(o, root).get("type") != "null"]
        return valid_value(rng.choice(non_null or options), root, rng, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or kind)
    if kind == "string":
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 400), 400)
        pattern = schema.get("pattern")
        candidates = [s for s in HOSTILE_STRINGS if low <= len(s) <= high]
        if pattern:
            candidates = [s for s in [*candidates, "abc", "a-1", "x_y", "task-1"] if re.fullmatch(pattern, s)]
        if not candidates:
            return "a" * max(low, 1)
        return rng.choice(candidates)
    if kind in ("integer", "number"):
        low = schema.get(
            "minimum", schema.get("exclusiveMinimum", -3) + (1 if "exclusiveMinimum" in schema else 0)
        )
        high = schema.get(
            "maximum", schema.get("exclusiveMaximum", 1000) - (1 if "exclusiveMaximum" in schema else 0)
        )
        value = rng.choice([low, high, (low + high) // 2 if kind == "integer" else (low + high) / 2])
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return rng.choice([True, False])
    if kind == "array":
        if depth > 3:
            return []
        low, high = schema.get("minItems", 0), min(schema.get("maxItems", 3), 3)
        count = rng.randint(low, max(low, high))
        return [valid_value(schema.get("items", {}), root, rng, depth + 1) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        if depth > 3:
            return {}
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        value = {}
        for name, prop in properties.items():
            if name in required or rng.random() < 0.5:
                value[name] = valid_value(prop, root, rng, depth + 1)
        return value
    return rng.choice(["x", 1, True, None])


WRONG_TYPES: list[Any] = [None, 12345, -1, 3.5, True, "not-a-number", [], ["x"], {}, {"a": 1}]


def argument_cases(schema: dict[str, Any], rng: random.Random, rounds: int) -> list[dict[str, Any]]:
    """Valid argument sets, then each kind of invalid one."""
    properties = schema.get("properties", {})
    required = list(schema.get("required", []))
    cases = [valid_value(schema, schema, rng) for _ in range(rounds)]
    cases.append({})
    base = valid_value(schema, schema, rng)
    for name in required:
        cases.append({k: v for k, v in base.items() if k != name})
    for name, prop in properties.items():
        for wrong in rng.sample(WRONG_TYPES, 4):
            cases.append({**base, name: wrong})
        prop = _resolve(prop, schema)
        if "maxLength" in prop:
            cases.append({**base, name: "x" * (prop["maxLength"] + 1)})
        elif prop.get("type") == "string":
            # tools/list leaves out length guards of 500 or more (hostd.core.tools.LISTED_BOUND_FLOOR):
            # probe past the common hidden ones (600, 1,000) as well as far beyond (below).
            cases.append({**base, name: "x" * 1_001})
        if "maximum" in prop:
            cases.append({**base, name: prop["maximum"] + 1})
        if "minimum" in prop:
            cases.append({**base, name: prop["minimum"] - 1})
        cases.append({**base, name: "長" * 200_000})
    cases.append({**base, "unexpected_argument_xyz": 1})
    return cases


async def fuzz_tools(
    client: Client,
    *,
    seed: int = 1234,
    rounds: int = 8,
    skip: frozenset[str] = frozenset(),
) -> FuzzReport:
    """Call every listed tool with generated arguments and report what went wrong."""
    rng = random.Random(seed)
    report = FuzzReport()
    tools = (await client.list_tools()).tools
    for tool in tools:
        if tool.name in skip:
            continue
        for arguments in argument_cases(tool.input_schema, rng, rounds):
            report.calls += 1
            try:
                result = await client.call_tool(tool.name, arguments)
            except Exception as exc:  # a protocol error for a listed tool is a failure too
                report.failures.append(
                    f"{tool.name}({_short(arguments)}): raised {type(exc).__name__}: {exc}"
                )
                continue
            envelope = result.structured_content or {}
            code = (envelope.get("error") or {}).get("code", "OK") if result.is_error else "OK"
            report.codes[code] = report.codes.get(code, 0) + 1
            if code == "INTERNAL" or envelope.get("status") not in ("success", "error"):
                report.failures.append(f"{tool.name}({_short(arguments)}): {code}")
    if not (await client.list_tools()).tools and tools:  # the server still answers
        report.failures.append("server stopped listing tools after the fuzz run")
    return report


def _short(arguments: dict[str, Any]) -> str:
    text = repr(arguments)
    return text if len(text) < 300 else text[:300] + "..."
