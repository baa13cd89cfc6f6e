"""Turning a plugin's typed Python function into an MCP tool: schemas, validation, envelope.

A tool is a plain function whose parameters are annotated (``Annotated[str, Field(...)]``,
``Literal[...]``) and whose return type is a ``ToolOutput`` model. From these the host derives
the complete ``inputSchema`` and ``outputSchema``, validates arguments itself (so argument
errors are envelopes naming the argument, not the SDK's raw text) and wraps results in the
one envelope every tool answers with.
"""

from __future__ import annotations

import copy
import inspect
import re
import time
import typing
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hostd_errors import Text
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from hostd.api import Roots, ToolContext, ToolFunction, ToolOutput
from hostd.core.arguments import describe_valid, explain
from hostd.core.errors import HostError
from hostd.core.schema_cache import SchemaCache
from hostd.core.textlength import TextLength

if TYPE_CHECKING:
    from hostd.core.context import CallContext

RESERVED_KEYS: frozenset[str] = frozenset({"status", "message", "error", "metadata"})
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DESCRIPTION = 1024
#: The tool tiers a plugin may put a tool in: ``core`` (everyday use) or ``all`` (the rest).
TIERS: tuple[str, ...] = ("core", "all")
#: What a tool does to what the server keeps, as its plugin declares it (``register(access=...)``).
ACCESS_CLASSES: tuple[str, ...] = ("read", "write")


@dataclass
class ToolSpec:
    """One registered tool, with everything the server needs to list and call it."""

    name: str
    plugin: str
    function: ToolFunction
    description: str
    input_fields: dict[str, Any]
    output_model: type[ToolOutput]
    context_parameter: str | None
    is_async: bool
    #: The parameter annotated ``hostd.Roots``: the tool works on the user's files and the host
    #: asks the client for its roots before calling it. None: the client is never asked.
    roots_parameter: str | None
    annotations: dict[str, Any]
    title: str | None = None
    tier: str = "all"
    #: ``read`` or ``write``, as the plugin declared it: what the access policy asks a member's
    #: scopes for. A read that counts accesses (``read_memory``) is a read.
    access: str = "write"
    registered_name: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] = field(default_factory=dict)
    _input_model: type[BaseModel] | None = None

    def call_arguments(self, validated: BaseModel, context: CallContext[Any]) -> dict[str, Any]:
        """The keyword arguments the tool function is called with: the validated arguments, plus
        the call's context and the client's roots where the function asks for them."""
        kwargs = {key: getattr(validated, key) for key in type(validated).model_fields}
        if self.context_parameter:
            kwargs[self.context_parameter] = context
        if self.roots_parameter:
            kwargs[self.roots_parameter] = context.roots
        return kwargs

    @property
    def uses_roots(self) -> bool:
        """Whether the host asks the client for its roots before calling the tool."""
        return self.roots_parameter is not None

    @cached_property
    def listed_schema(self) -> dict[str, Any]:
        """The input schema ``tools/list`` shows a model (see ``listed_input_schema``)."""
        return listed_input_schema(self.input_schema)

    @cached_property
    def listed_output_schema(self) -> dict[str, Any]:
        """The output schema ``tools/list`` shows (see ``listed_output_schema``)."""
        return listed_output_schema(self.output_schema)

    @property
    def input_model(self) -> type[BaseModel]:
        """The model arguments are validated with (built on first use when schemas came from cache)."""
        if self._input_model is None:
            self._input_model = _input_model(self.name, self.input_fields)
        return self._input_model

    def renamed(self, name: str) -> ToolSpec:
        """A copy exposed under another name (a profile's tool-name prefix)."""
        check_tool_name(name, self.plugin)
        clone = ToolSpec(**{**self.__dict__, "name": name})
        return clone


def check_tool_name(name: str, plugin: str) -> None:
    if not TOOL_NAME_PATTERN.match(name):
        raise HostError(f"plugin {plugin!r}: tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")


def _parameters(
    function: ToolFunction, hints: dict[str, Any], where: str
) -> tuple[dict[str, Any], str | None, str | None]:
    """The tool's arguments as pydantic fields, and the parameters the host fills in itself: the
    call's context (``ToolContext``) and the effective roots (``Roots``)."""
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    roots_parameter: str | None = None
    for parameter in inspect.signature(function).parameters.values():
        annotation = hints.get(parameter.name, inspect.Parameter.empty)
        if annotation is ToolContext or typing.get_origin(annotation) is ToolContext:
            context_parameter = parameter.name
            continue
        if annotation is Roots:
            roots_parameter = parameter.name
            continue
        if annotation is inspect.Parameter.empty:
            raise HostError(f"{where} parameter {parameter.name!r} has no type")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    return fields, context_parameter, roots_parameter


def build_tool_spec(
    function: ToolFunction,
    *,
    plugin: str,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    access: str = "write",
    destructive: bool = True,
    idempotent: bool = False,
    open_world: bool = False,
    tier: str = "all",
    cache: SchemaCache | None = None,
) -> ToolSpec:
    """Check a plugin's tool function against the contract and derive its schemas.

    With a ``cache`` holding this tool (same code), the schemas come from it and the input
    model is built on first call; the contract checks on the model ran when it was cached.
    """
    tool_name = name or function.__name__
    check_tool_name(tool_name, plugin)
    text = (description if description is not None else _unwrapped(inspect.getdoc(function) or "")).strip()
    if not 1 <= len(text) <= MAX_DESCRIPTION:
        raise HostError(
            f"plugin {plugin!r}: tool {tool_name!r} needs a description of 1 to {MAX_DESCRIPTION} "
            f"characters (has {len(text)})"
        )
    hints = typing.get_type_hints(function, include_extras=True)
    fields, context_parameter, roots_parameter = _parameters(
        function, hints, f"plugin {plugin!r}: tool {tool_name!r}"
    )
    output_model = hints.get("return")
    if not (isinstance(output_model, type) and issubclass(output_model, ToolOutput)):
        raise HostError(
            f"plugin {plugin!r}: tool {tool_name!r} must declare a ToolOutput subclass as return type"
        )
    if tier not in TIERS:
        raise HostError(f"plugin {plugin!r}: tool {tool_name!r} tier must be one of {', '.join(TIERS)}")
    reserved = RESERVED_KEYS & set(output_model.model_fields)
    if reserved:
        raise HostError(
            f"plugin {plugin!r}: tool {tool_name!r} output declares reserved key(s) {sorted(reserved)}; "
            "nest such a record under its own key (e.g. 'memory', 'task')"
        )
    if access not in ACCESS_CLASSES:
        raise HostError(
            f"plugin {plugin!r}: tool {tool_name!r} access must be one of {', '.join(ACCESS_CLASSES)}"
        )
    read_only = access == "read"  # the protocol's hint follows the class the plugin declares
    annotations = {
        "readOnlyHint": read_only,
        "destructiveHint": destructive and not read_only,
        "idempotentHint": idempotent or read_only,
        "openWorldHint": open_world,
    }
    spec = ToolSpec(
        name=tool_name,
        plugin=plugin,
        function=function,
        description=text,
        input_fields=fields,
        output_model=output_model,
        context_parameter=context_parameter,
        is_async=inspect.iscoroutinefunction(function),
        roots_parameter=roots_parameter,
        annotations=annotations,
        title=title,
        tier=tier,
        access=access,
        registered_name=tool_name,
    )
    _derive_schemas(spec, cache, f"plugin {plugin!r}: tool {tool_name!r}")
    return spec


def _derive_schemas(spec: ToolSpec, cache: SchemaCache | None, where: str) -> None:
    """The tool's input and output schemas, from the cache when it holds this code's, else made
    (after checking every argument is described) and cached."""
    function = spec.function
    key = f"{function.__module__}.{function.__qualname__}:{spec.registered_name}"
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        spec.input_schema, spec.output_schema = cached["input"], cached["output"]
        return
    for field_name, info in spec.input_model.model_fields.items():
        if not (info.description or "").strip():
            raise HostError(
                f"{where} parameter {field_name!r} has no description "
                "(annotate it with Field(description=...))"
            )
    spec.input_schema = input_schema_of(spec.input_model)
    spec.output_schema = output_schema_of(spec.output_model)
    if cache is not None:
        cache.put(key, {"input": spec.input_schema, "output": spec.output_schema})


def _unwrapped(docstring: str) -> str:
    """A docstring as one line per paragraph: its line breaks are only source layout."""
    return re.sub(r"(?<!\n)\n(?!\n)", " ", docstring)


def _input_model(tool_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    config = ConfigDict(extra="forbid")
    model: type[BaseModel] = create_model(f"{tool_name}_arguments", __config__=config, **fields)
    checked = {name: _with_text_length(info) for name, info in model.model_fields.items()}
    if any(info is not None for info in checked.values()):
        rebuilt: dict[str, Any] = {
            name: (info.annotation, checked[name] or info) for name, info in model.model_fields.items()
        }
        model = create_model(f"{tool_name}_arguments", __config__=config, **rebuilt)
    return model


def _with_text_length(info: FieldInfo) -> FieldInfo | None:
    """A text argument's length limits checked with ``len()`` (``TextLength``), not on the UTF-8
    copy pydantic would keep inside the argument for the whole call; ``None`` when there are none."""
    if info.annotation not in (str, str | None):
        return None
    # pydantic keeps min_length/max_length as annotated_types' MinLen/MaxLen (its own dependency).
    # Any other constraint (a pattern) reads the UTF-8 form anyway, and pydantic's order of checks
    # decides which error is answered: such an argument is left as it is.
    limits = {type(item).__name__: item for item in info.metadata}
    if not limits or not set(limits) <= {"MinLen", "MaxLen"}:
        return None
    checked = copy.copy(info)
    checked.metadata = [
        TextLength(
            min_length=getattr(limits.get("MinLen"), "min_length", None),
            max_length=getattr(limits.get("MaxLen"), "max_length", None),
        )
    ]
    return checked


def input_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The tool's ``inputSchema``, as short as it can be without losing what a model needs.

    Every tool's input schema is paid for in the model's context on every turn, so what
    pydantic adds for its own sake goes: titles, and the ``null`` branch and ``default: null``
    of an optional argument (leaving it out is how a model says "none"; the host still takes
    an explicit ``null``). Named types (``TypeAliasType``) stay shared in ``$defs``.
    """
    schema = model.model_json_schema()
    schema.pop("title", None)
    properties = schema.setdefault("properties", {})
    for name, prop in properties.items():
        properties[name] = _without_null_option(prop)
    for definition in schema.get("$defs", {}).values():
        definition.pop("title", None)
        nested = definition.get("properties", {})
        for name, prop in nested.items():
            nested[name] = _without_null_option(prop)
    _inline_single_use_definitions(schema)
    return schema


#: Length and count bounds at or above this are guards against abuse, not facts a model acts on
#: (a 600-character memory URI, a 2,048-character cursor, a 2,000,000-character memory):
#: ``tools/list`` leaves them out. Bounds a model may meet (a 200-character title) stay.
LISTED_BOUND_FLOOR = 500

#: Inside a character class, ``\w`` is exactly ``A-Za-z0-9_`` in ECMA-262, the regex dialect of
#: JSON Schema: ``tools/list`` spells patterns (the id rule above all) the shorter way.
_WORD_CLASS = re.compile(r"(?<=\[)A-Za-z0-9_|(?<=\[\^)A-Za-z0-9_")

#: Defaults that say no more than leaving the argument out: nothing, and a flag that is off.
_EMPTY_DEFAULTS: tuple[Any, ...] = ("", [], {}, False)


def listed_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema as ``tools/list`` shows it: ``schema`` less what no model acts on.

    Every listed tool is paid for in the model's context on every turn. The host still
    validates against the whole schema (the input model), and a refused argument's error names
    the bound it broke, so only the listing is lighter: bounds of ``LISTED_BOUND_FLOOR`` or more
    go, so do empty defaults (``""``, ``[]``, ``{}`` and ``false``: what leaving the argument out
    means anyway),
    and patterns are written in their shorter equivalent spelling.
    """

    def lighter(node: Any) -> Any:
        if isinstance(node, list):
            return [lighter(value) for value in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("maxLength", "maxItems") and isinstance(value, int) and value >= LISTED_BOUND_FLOOR:
                continue
            if key == "default" and any(
                value == empty and type(value) is type(empty) for empty in _EMPTY_DEFAULTS
            ):
                continue
            if key == "pattern" and isinstance(value, str):
                out[key] = _WORD_CLASS.sub(r"\\w", value)
                continue
            named = key in ("properties", "$defs") and isinstance(value, dict)
            out[key] = {k: lighter(v) for k, v in value.items()} if named else lighter(value)
        return out

    result: dict[str, Any] = lighter(schema)
    return result


_DEF_PREFIX = "#/$defs/"


def _references(node: Any) -> list[str]:
    """The names of the ``$defs`` entries a schema fragment refers to, once per reference."""
    if isinstance(node, dict):
        found = (
            [node["$ref"][len(_DEF_PREFIX) :]] if str(node.get("$ref", "")).startswith(_DEF_PREFIX) else []
        )
        return found + [name for value in node.values() for name in _references(value)]
    if isinstance(node, list):
        return [name for value in node for name in _references(value)]
    return []


def _inline_single_use_definitions(schema: dict[str, Any]) -> None:
    """A definition used once costs more as a ``$ref`` than written in place: inline it.

    Where both the reference and the definition are described, both descriptions are kept.
    Definitions used twice or more stay shared in ``$defs``.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    counts: dict[str, int] = {}
    for name in _references({k: v for k, v in schema.items() if k != "$defs"}) + _references(definitions):
        counts[name] = counts.get(name, 0) + 1
    single = {
        name
        for name, definition in definitions.items()
        if counts.get(name, 0) == 1 and name not in _references(definition)
    }
    if not single:
        return

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(value) for value in node]
        if not isinstance(node, dict):
            return node
        ref = str(node.get("$ref", ""))
        if ref.startswith(_DEF_PREFIX) and ref[len(_DEF_PREFIX) :] in single:
            definition = dict(definitions[ref[len(_DEF_PREFIX) :]])
            own = {key: value for key, value in node.items() if key != "$ref"}
            descriptions = [d for d in (own.get("description"), definition.get("description")) if d]
            node = {**definition, **own}
            if descriptions:
                node["description"] = "; ".join(descriptions)
        return {key: inline(value) for key, value in node.items()}

    kept = {name: inline(definition) for name, definition in definitions.items() if name not in single}
    for key in [k for k in schema if k != "$defs"]:
        schema[key] = inline(schema[key])
    if kept:
        schema["$defs"] = kept
    else:
        schema.pop("$defs", None)


def _without_null_option(prop: dict[str, Any]) -> dict[str, Any]:
    prop.pop("title", None)
    options = prop.get("anyOf")
    if "default" in prop and prop["default"] is None:
        del prop["default"]
        if isinstance(options, list):
            kept = [option for option in options if option != {"type": "null"}]
            if len(kept) == 1:
                del prop["anyOf"]
                merged = {**kept[0], **prop}
                merged.pop("title", None)
                return merged
            prop["anyOf"] = kept
    return prop


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Stable UPPER_SNAKE error code"},
        "message": {"type": "string"},
        "details": {"type": "object"},
        "hint": {"type": ["string", "null"]},
    },
    "required": ["code", "message"],
}


#: Keywords that constrain only one JSON type, so they hold for ``null`` whatever they say.
_TYPE_SPECIFIC_KEYWORDS = frozenset(
    {
        "type", "title", "description", "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    }
)  # fmt: skip


def _nullable_as_type_list(prop: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` written as X with ``type: [X's type, "null"]``: the same values.

    Clients validate every answer against the output schema, and a ``null`` checked against
    ``anyOf`` first fails X (a validation error built and dropped) before it matches the null
    branch; the Python SDK's validator spent about half of a ``sequential_thinking`` answer's
    check on its two ``null`` fields. Only an X whose every keyword constrains its own type alone
    is merged (an ``enum`` or a ``$ref`` would not hold for ``null``).
    """
    options = prop.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return prop
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not isinstance(other, dict) or not isinstance(other.get("type"), str):
        return prop
    if not set(other) <= _TYPE_SPECIFIC_KEYWORDS:
        return prop
    merged = {key: value for key, value in prop.items() if key != "anyOf"}
    descriptions = [d for d in (merged.get("description"), other.get("description")) if d]
    merged = {**other, **merged, "type": [other["type"], "null"]}
    if descriptions:
        merged["description"] = "; ".join(descriptions)
    return merged


def output_schema_of(model: type[ToolOutput]) -> dict[str, Any]:
    """The envelope's schema: status, message, metadata, and the tool's own fields."""
    schema = model.model_json_schema(mode="serialization")
    properties = {
        "status": {"type": "string", "enum": ["success", "error"]},
        "message": {"type": "string", "description": "What happened, in the server's language"},
        # Described, not spelled out: clients validate every answer, and each keyword costs them.
        "metadata": {"type": "object", "description": "Facts about the call, e.g. execution_time_ms"},
        "error": ERROR_SCHEMA,
    }
    for key, value in schema.get("properties", {}).items():
        value.pop("title", None)
        properties[key] = _nullable_as_type_list(value)
    # Only the envelope's own keys are required: error answers carry no tool fields, and some
    # clients (the TypeScript SDK, so the MCP Inspector) validate error results too.
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": ["status", "message", "metadata"],
    }
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    return out


#: Keywords that only annotate (no answer passes or fails by them): a listed output schema
#: leaves them out (and ``format``, which JSON Schema 2020-12 also only annotates by default).
_OUTPUT_ANNOTATIONS = frozenset({"title", "default", "description", "examples"})


def listed_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema as ``tools/list`` shows it: the answer's shape, every answer still valid.

    Clients fetch every tool's output schema on each ``tools/list`` and validate answers against
    it; a client that hands whole tool objects to its model pays for it in tokens. The host keeps
    its own schema whole (``schema``, unchanged, what answers are built and tested against); the
    listed one says what an answer is made of and accepts every answer the host's accepts, in
    about half the bytes:

    - annotations go: pydantic's ``title`` on every type and field, ``default`` (an answer
      carries its fields; a default there is never applied), ``description`` and ``format``;
    - the answer's own level keeps what is required (``status``, ``message``, ``metadata``) and
      each plain field's type and values; ``error`` is listed as an object: it is the host's
      error envelope, the same for every tool (the README shows it), and an error answer
      says what it holds;
    - a record (an object with properties: a field's, an array's items, a definition) names
      every field it has; a field that is itself a record (or an array of records, or a record
      or ``null``) is spelled out the same way, any other field of a record is left open
      (``{}``: its name is what a reader needs, and an answer carries its value); a record's
      ``required`` list goes, and so does the ``type`` its properties or items already imply;
    - ``anyOf: [X, {type: null}]`` is written as X with a type list where X constrains only
      its own type (the same values, see ``_nullable_as_type_list``);
    - an ``enum`` of strings needs no ``type: string`` beside it;
    - a definition used once is written in place; one used twice or more (or by itself)
      stays shared in ``$defs``.
    """

    def lighter(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [lighter(value, depth) for value in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _OUTPUT_ANNOTATIONS or key == "format":
                continue
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                out[key] = {k: opened(lighter(v, depth + 1), depth + 1) for k, v in value.items()}
            elif key == "$defs" and isinstance(value, dict):
                out[key] = {k: lighter(v, 1) for k, v in value.items()}
            elif key in ("items", "additionalProperties"):
                out[key] = opened(lighter(value, depth), depth)
            else:
                out[key] = lighter(value, depth)
        enum = out.get("enum")
        if out.get("type") == "string" and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
            del out["type"]
        out = _nullable_as_type_list(out)
        if depth == 0:
            return out
        out.pop("required", None)
        if out.get("additionalProperties") in (True, {}):
            del out["additionalProperties"]
        kind = out.get("type")
        if (kind == "object" and out.get("properties")) or (kind == "array" and _spelled(out.get("items"))):
            del out["type"]
        if out.get("items") == {}:
            del out["items"]
        return out

    def opened(field: Any, depth: int) -> Any:
        """A record's field left open unless it is itself a record (or records, or ``null``)."""
        return field if depth < 2 or _spelled(field) else {}

    result: dict[str, Any] = lighter(schema, 0)
    if "error" in result.get("properties", {}):
        result["properties"]["error"] = {"type": "object"}
    _inline_single_use_definitions(result)
    return result


def _spelled(schema: Any) -> bool:
    """Whether a listed output schema spells ``schema`` out: a record (an object with properties,
    or a shared definition), an array of them, or one of them or ``null``."""
    if not isinstance(schema, dict):
        return False
    if schema.get("properties") or "$ref" in schema:
        return True
    options = schema.get("anyOf") or schema.get("oneOf") or []
    return _spelled(schema.get("items")) or any(_spelled(option) for option in options)


# --- argument validation -------------------------------------------------------------------


class ArgumentError(Exception):
    """Arguments that do not fit the tool's input model, already explained for people."""

    def __init__(self, message: str, hint: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details


def validate_arguments(spec: ToolSpec, arguments: dict[str, Any] | None, language: str) -> BaseModel:
    """Validate raw call arguments, raising ``ArgumentError`` that names the argument."""
    if arguments is not None and not isinstance(arguments, dict):
        raise ArgumentError(
            Text(en="Arguments must be a JSON object.", zh="参数必须是 JSON 对象。").render(language),
            describe_valid(spec.input_schema, "", language),
            {"received_type": type(arguments).__name__},
        )
    try:
        return spec.input_model.model_validate(arguments or {})
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        message, hint, details = explain(errors, spec.input_schema, language)
        raise ArgumentError(message, hint, details) from None


# --- the envelope ------------------------------------------------------------------------


def success_envelope(output: ToolOutput, message: str, started: float, language: str) -> dict[str, Any]:
    """The success answer; ``hostd.Text`` values among the output's fields are written in ``language``."""
    body: dict[str, Any] = {"status": "success", "message": message}
    body.update(output.model_dump(mode="json", context={"language": language}))
    body["metadata"] = {"execution_time_ms": round((time.perf_counter() - started) * 1000, 3)}
    return body


#: Longest text an error answer echoes whole; a longer value is cut to a prefix and its length.
MAX_ECHO_CHARS = 200
#: Longest message or hint an error answer carries (a sentence quoting a huge argument is cut).
MAX_SENTENCE_CHARS = 4_000


def bounded_text(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` itself when short, else its first ``limit`` characters and "…[length]"."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text)}]"


def bounded_details(details: dict[str, Any]) -> dict[str, Any]:
    """Details whose long strings (an echoed argument) are a prefix and "…", with the full length
    beside them as ``<key>_length``; in a list, the length follows the prefix ("…[length]").

    A 3 MB argument echoed whole made a 6 MB answer (text block and structured content).
    """

    def bound_mapping(mapping: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in mapping.items():
            if isinstance(value, str) and len(value) > MAX_ECHO_CHARS:
                out[key] = value[:MAX_ECHO_CHARS] + "…"
                out.setdefault(f"{key}_length", len(value))
            else:
                out[key] = bound(value)
        return out

    def bound(value: Any) -> Any:
        if isinstance(value, str):
            return bounded_text(value)
        if isinstance(value, dict):
            return bound_mapping(value)
        if isinstance(value, list | tuple):
            return [bound(item) for item in value]
        return value

    return bound_mapping(details)


def error_envelope(
    code: str,
    message: str,
    *,
    hint: str | None,
    details: dict[str, Any] | None,
    started: float,
) -> dict[str, Any]:
    """The error answer; every value it echoes is bounded (``bounded_details``)."""
    message = bounded_text(message, MAX_SENTENCE_CHARS)
    error: dict[str, Any] = {"code": code, "message": message, "details": bounded_details(details or {})}
    if hint:
        error["hint"] = bounded_text(hint, MAX_SENTENCE_CHARS)
    return {
        "status": "error",
        "message": message,
        "error": error,
        "metadata": {"execution_time_ms": round((time.perf_counter() - started) * 1000, 3)},
    }


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _pruned(item) for key, item in value.items() if not _empty(item)}
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value


def for_the_model(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope as the text block shows it: without the empty values a model gains nothing from.

    Inside records, ``null``, ``""``, ``[]`` and ``{}`` go (a hit without tags, a task without
    labels); at the top level only ``null`` and ``""``, so an empty result list still says so.
    ``structuredContent`` keeps every field, as the output schema describes it.
    """
    return {
        key: _pruned(value)
        for key, value in envelope.items()
        if (value is not None and value != "") or key in ("status", "message")
    }
