"""Resources: the records plugins keep, offered for clients to browse, read and attach.

A plugin registers kinds of resource through ``hostd_register_resources``: a URI template
(RFC 6570 level 1-2: ``{name}`` matches one path segment, ``{+name}`` the rest), a function that
lists a page of them and one that reads one. The host serves ``resources/list`` (every kind in
turn, paged with one opaque cursor), ``resources/templates/list`` and ``resources/read``, and
leaves out what the caller's profile does not serve: each kind follows one of its plugin's
tools, and is served exactly where that tool is.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hostd_errors import Text
from pydantic import BaseModel, Field

from hostd.core.errors import HostError, ToolError

#: At most this many resources come back from one ``resources/list`` page.
RESOURCE_PAGE = 50


class ResourceInfo(BaseModel):
    """One resource as a listing shows it."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = Field(default=None, description="Bytes of the resource's text, when known")
    updated_at: str | None = Field(default=None, description="ISO 8601 time of the last change")


class ResourcePage(BaseModel):
    """A page of one kind's resources and the cursor of the next page (``None`` at the end)."""

    resources: list[ResourceInfo]
    next_cursor: str | None = None


class ResourceText(BaseModel):
    """What reading a resource answers: its text and its type."""

    uri: str
    text: str
    mime_type: str = "text/plain"


class ResourceBlob(BaseModel):
    """What reading a binary resource (an image, an archive) answers: its bytes and its type;
    the host sends them base64-encoded as MCP's ``blob``."""

    uri: str
    blob: bytes
    mime_type: str = "application/octet-stream"


class ResourceLink(BaseModel):
    """A resource (a file a tool wrote, a record it touched) named beside a tool's envelope."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @classmethod
    def file(cls, path: str | os.PathLike[str], mime_type: str | None = "text/markdown") -> ResourceLink:
        """A link to a file a tool wrote (a ``file://`` URI of its absolute path)."""
        resolved = Path(path).absolute()
        return cls(uri=resolved.as_uri(), name=resolved.name, mime_type=mime_type)


#: ``list(ctx, cursor)``: a page of this kind's resources.
ListResources = Callable[..., ResourcePage]
#: ``read(ctx, params)``: the resource whose URI matched the template with these ``params``
#: (``ResourceBlob`` for bytes).
ReadResource = Callable[..., ResourceText | ResourceBlob]
#: ``complete(ctx, argument, prefix)``: values of a template argument starting with ``prefix``,
#: most recently changed first.
CompleteArgument = Callable[..., list[str]]


class RegisterResource(Protocol):
    """The callback ``hostd_register_resources`` receives."""

    def __call__(
        self,
        uri_template: str,
        *,
        name: str,
        title: str,
        description: str,
        mime_type: str,
        read: ReadResource,
        tool: str,
        list: ListResources | None = None,
        complete: CompleteArgument | None = None,
    ) -> None: ...


_VARIABLE = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


def template_pattern(template: str) -> re.Pattern[str]:
    """The regular expression a URI must match to belong to ``template``."""
    parts: list[str] = []
    position = 0
    for match in _VARIABLE.finditer(template):
        parts.append(re.escape(template[position : match.start()]))
        reserved, name = match.groups()
        parts.append(f"(?P<{name}>.+)" if reserved else f"(?P<{name}>[^/?#]+)")
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("^" + "".join(parts) + "$")


@dataclass
class ResourceKind:
    """One kind of resource a plugin serves."""

    plugin: str
    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str
    read: ReadResource
    tool: str
    list: ListResources | None = None  # None: reached through the template alone, never listed
    complete: CompleteArgument | None = None
    pattern: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.pattern = template_pattern(self.uri_template)
        if not _VARIABLE.search(self.uri_template) or "://" not in self.uri_template:
            raise HostError(
                f"plugin {self.plugin!r}: resource template {self.uri_template!r} needs a scheme "
                "and at least one {variable}"
            )

    @property
    def arguments(self) -> builtins.list[str]:
        return [name for _, name in _VARIABLE.findall(self.uri_template)]

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.match(uri)
        return found.groupdict() if found else None


def encode_list_cursor(kind: int, cursor: str | None) -> str:
    raw = json.dumps({"k": kind, "c": cursor}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_list_cursor(cursor: str | None) -> tuple[int, str | None]:
    """The kind a ``resources/list`` cursor resumes and that kind's own cursor; ValueError if not ours."""
    if cursor is None:
        return 0, None
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise ValueError("malformed") from None
    if not isinstance(data, dict) or not isinstance(data.get("k"), int) or data["k"] < 0:
        raise ValueError("malformed")
    inner = data.get("c")
    if inner is not None and not isinstance(inner, str):
        raise ValueError("malformed")
    return data["k"], inner


def not_found(uri: str) -> ToolError:
    """The one answer to a URI no served resource has (also one the caller's profile does not serve)."""
    return ToolError(
        "NOT_FOUND",
        Text(en=f"No resource {uri}.", zh=f"没有资源 {uri}。"),
        hint=Text(
            en="List resources (resources/list) or resource templates (resources/templates/list).",
            zh="请列出资源（resources/list）或资源模板（resources/templates/list）以获得有效的 URI。",
        ),
        details={"uri": uri},
    )


def find_kind(kinds: Sequence[ResourceKind], uri: str) -> tuple[ResourceKind, dict[str, str]] | None:
    for kind in kinds:
        params = kind.match(uri)
        if params is not None:
            return kind, params
    return None


__all__ = [
    "RESOURCE_PAGE",
    "Any",
    "CompleteArgument",
    "ListResources",
    "ReadResource",
    "RegisterResource",
    "ResourceBlob",
    "ResourceInfo",
    "ResourceKind",
    "ResourceLink",
    "ResourcePage",
    "ResourceText",
    "decode_list_cursor",
    "encode_list_cursor",
    "find_kind",
    "not_found",
    "template_pattern",
]
