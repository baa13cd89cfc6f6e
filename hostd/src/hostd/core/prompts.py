"""Prompts: message templates plugins offer for a user to pick (MCP ``prompts/list``, ``prompts/get``).

A plugin registers a source of prompts through ``hostd_register_prompts``: a function listing
them (they may change while serving, as a user adds a template file), one rendering one with
its arguments, and optionally one completing an argument as the user types. Like a resource
kind, a source follows one of its plugin's tools and is served exactly where that tool is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel

from hostd.core.resources import ResourceBlob, ResourceText

#: ``list(ctx)``: the prompts this source offers now.
ListPrompts = Callable[..., "list[PromptInfo]"]
#: ``get(ctx, name, arguments)``: the prompt ``name`` rendered with ``arguments`` (raise
#: ``ToolError("INVALID_ARGUMENT", ...)`` for a missing or bad argument).
GetPrompt = Callable[..., "PromptText"]
#: ``complete(ctx, prompt, argument, prefix, arguments)``: values of ``argument`` starting with
#: ``prefix``, most recently used first (``arguments``: what the user filled in already).
CompletePromptArgument = Callable[..., "list[str]"]


class PromptArgumentInfo(BaseModel):
    name: str
    description: str
    required: bool = False


class PromptInfo(BaseModel):
    """One prompt as ``prompts/list`` shows it."""

    name: str
    title: str
    description: str
    arguments: list[PromptArgumentInfo] = []


class PromptImage(BaseModel):
    """An image a rendered prompt puts in the conversation (sent base64-encoded)."""

    data: bytes
    mime_type: str


class PromptText(BaseModel):
    """A rendered prompt: a short description and the user messages it puts in the conversation,
    each a text, an image, or a resource embedded whole (``ResourceText`` / ``ResourceBlob``)."""

    description: str
    messages: list[str | PromptImage | ResourceText | ResourceBlob]


class RegisterPrompts(Protocol):
    """The callback ``hostd_register_prompts`` receives."""

    def __call__(
        self,
        *,
        list: ListPrompts,
        get: GetPrompt,
        tool: str,
        complete: CompletePromptArgument | None = None,
    ) -> None: ...


@dataclass
class PromptSource:
    """One plugin's prompts."""

    plugin: str
    list: ListPrompts
    get: GetPrompt
    tool: str
    complete: CompletePromptArgument | None = None


__all__ = [
    "CompletePromptArgument",
    "GetPrompt",
    "ListPrompts",
    "PromptArgumentInfo",
    "PromptImage",
    "PromptInfo",
    "PromptSource",
    "PromptText",
    "RegisterPrompts",
]
