"""A test-only plugin that serves what the MCP conformance suite (``@modelcontextprotocol/conformance``)
asks a server under test to implement: the ``test://`` resources and resource template, the
``test_*`` prompts and completions of their arguments, and the ``test_*`` tools the resources and
prompts follow (every resource kind and prompt source follows one of its plugin's tools).

Never shipped: it lives in the cross-package tests and is installed by entry point
(``conformance-test``) into a temporary folder for the ``hostd serve`` processes of
``tests/test_conformance.py`` and ``tests/test_ts_client.py``
(``hostd_testing.install_plugin_source``). What each answers is what the suite's scenario
descriptions ask for (``conformance list``, ``--verbose``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio

from hostd import (
    PluginContext,
    PromptArgumentInfo,
    PromptImage,
    PromptInfo,
    PromptText,
    RegisterPrompts,
    RegisterResource,
    RegisterTool,
    ResourceBlob,
    ResourceInfo,
    ResourcePage,
    ResourceText,
    Text,
    ToolContext,
    ToolError,
    ToolOutput,
    hookimpl,
)

#: A 1x1 transparent PNG: the binary resource and the prompt's image.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
STATIC_TEXT = "This is the content of the static text resource."
EMBEDDED_TEXT = "Embedded resource content for testing."
LOG_MESSAGES = ["Tool execution started", "Tool processing data", "Tool execution completed"]
#: What completing ``arg1`` of ``test_prompt_with_arguments`` offers, filtered by the typed prefix.
ARG1_VALUES = ["paris", "park", "party", "test-alpha", "test-beta"]


class SimpleText(ToolOutput):
    text: str


def test_simple_text() -> SimpleText:
    """Answer a fixed text (the conformance suite's simple tool; the test resources follow it)."""
    return SimpleText(text="This is a simple text response for testing.")


class Logged(ToolOutput):
    messages: int


async def test_tool_with_logging(ctx: ToolContext[Any]) -> Logged:
    """Log three messages at info level, 50 ms apart, through the plugin's logger (the
    conformance suite's logging tool: the client should receive each as a log notification)."""
    for index, message in enumerate(LOG_MESSAGES):
        if index:
            await anyio.sleep(0.05)
        ctx.logger.info(message)
    return Logged(messages=len(LOG_MESSAGES))


def _static(ctx: ToolContext[Any], cursor: str | None) -> ResourcePage:
    return ResourcePage(
        resources=[
            ResourceInfo(
                uri="test://static-text",
                name="static-text",
                title="Static text",
                description="A fixed text resource",
                mime_type="text/plain",
            ),
            ResourceInfo(
                uri="test://static-binary",
                name="static-binary",
                title="Static binary",
                description="A fixed PNG image",
                mime_type="image/png",
            ),
        ]
    )


def _not_found(uri: str) -> ToolError:
    return ToolError(
        "NOT_FOUND", Text(en=f"No resource {uri}.", zh=f"没有资源 {uri}。"), details={"uri": uri}
    )


def _read_static(ctx: ToolContext[Any], params: dict[str, str]) -> ResourceText | ResourceBlob:
    uri = f"test://{params['name']}"
    if params["name"] == "static-text":
        return ResourceText(uri=uri, text=STATIC_TEXT, mime_type="text/plain")
    if params["name"] == "static-binary":
        return ResourceBlob(uri=uri, blob=PNG, mime_type="image/png")
    if params["name"] == "watched-resource":  # what the subscribe scenarios subscribe to (not listed)
        return ResourceText(uri=uri, text="A resource to watch.", mime_type="text/plain")
    raise _not_found(uri)


def _read_template(ctx: ToolContext[Any], params: dict[str, str]) -> ResourceText:
    item = params["id"]
    body = {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
    return ResourceText(
        uri=f"test://template/{item}/data", text=json.dumps(body), mime_type="application/json"
    )


def _complete_id(ctx: ToolContext[Any], argument: str, prefix: str, arguments: dict[str, str]) -> list[str]:
    return [value for value in ("123", "124", "200") if value.startswith(prefix)]


PROMPTS = [
    PromptInfo(name="test_simple_prompt", title="Simple", description="A prompt without arguments"),
    PromptInfo(
        name="test_prompt_with_arguments",
        title="With arguments",
        description="A prompt with two required arguments",
        arguments=[
            PromptArgumentInfo(name="arg1", description="First test argument", required=True),
            PromptArgumentInfo(name="arg2", description="Second test argument", required=True),
        ],
    ),
    PromptInfo(
        name="test_prompt_with_embedded_resource",
        title="With a resource",
        description="A prompt embedding a resource",
        arguments=[PromptArgumentInfo(name="resourceUri", description="URI to embed", required=True)],
    ),
    PromptInfo(name="test_prompt_with_image", title="With an image", description="A prompt with an image"),
]


def _list_prompts(ctx: ToolContext[Any]) -> list[PromptInfo]:
    return PROMPTS


def _argument(arguments: dict[str, str], name: str) -> str:
    if not arguments.get(name):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en=f"The argument {name} is required.", zh=f"缺少参数 {name}。"),
            details={"argument": name},
        )
    return arguments[name]


def _get_prompt(ctx: ToolContext[Any], name: str, arguments: dict[str, str]) -> PromptText:
    if name == "test_simple_prompt":
        return PromptText(description="A simple prompt", messages=["This is a simple prompt for testing."])
    if name == "test_prompt_with_arguments":
        arg1, arg2 = _argument(arguments, "arg1"), _argument(arguments, "arg2")
        return PromptText(
            description="A prompt with arguments",
            messages=[f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"],
        )
    if name == "test_prompt_with_embedded_resource":
        uri = _argument(arguments, "resourceUri")
        return PromptText(
            description="A prompt with an embedded resource",
            messages=[
                ResourceText(uri=uri, text=EMBEDDED_TEXT, mime_type="text/plain"),
                "Please process the embedded resource above.",
            ],
        )
    return PromptText(
        description="A prompt with an image",
        messages=[PromptImage(data=PNG, mime_type="image/png"), "Please analyze the image above."],
    )


def _complete_prompt(
    ctx: ToolContext[Any], prompt: str, argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    if prompt == "test_prompt_with_arguments" and argument == "arg1":
        return [value for value in ARG1_VALUES if value.startswith(prefix)]
    return []


@hookimpl
def hostd_register_tools(register: RegisterTool) -> None:
    register(test_simple_text, access="read")
    register(test_tool_with_logging, access="read")


@hookimpl
def hostd_register_resources(register: RegisterResource, context: PluginContext[Any]) -> None:
    register(
        "test://template/{id}/data",
        name="template-data",
        title="Template data",
        description="JSON data for an id",
        mime_type="application/json",
        read=_read_template,
        complete=_complete_id,
        tool="test_simple_text",
    )
    register(
        "test://{name}",
        name="static",
        title="Static test resources",
        description="The fixed text and binary resources",
        mime_type="text/plain",
        list=_static,
        read=_read_static,
        tool="test_simple_text",
    )


@hookimpl
def hostd_register_prompts(register: RegisterPrompts, context: PluginContext[Any]) -> None:
    register(list=_list_prompts, get=_get_prompt, complete=_complete_prompt, tool="test_simple_text")
