"""What a resource read and a rendered prompt may hold besides text: bytes (``ResourceBlob``, sent
as MCP's base64 ``blob``), images (``PromptImage``) and resources embedded whole in a prompt.

The conformance suite's ``resources-read-binary``, ``prompts-get-with-image`` and
``prompts-get-embedded-resource`` scenarios asked for them (``tests/test_conformance.py``); before,
a read could answer text only and a prompt only text messages.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated, Any

import mcp_types as types
import pytest
from hostd_testing import in_memory_client
from pydantic import BaseModel, Field

from hostd import (
    PromptImage,
    PromptInfo,
    PromptText,
    ResourceBlob,
    ResourceInfo,
    ResourcePage,
    ResourceText,
    ToolOutput,
    hookimpl,
)

pytestmark = pytest.mark.anyio

#: Bytes that are not UTF-8 (a NUL, a lone continuation byte, 0xff): they must arrive unchanged.
RAW = b"\x89PNG\r\n\x1a\n\x00\x80\xff raw"


class Shown(ToolOutput):
    name: str


def show_file(name: Annotated[str, Field(description="The file's name")]) -> Shown:
    """Show a file's name (the tool the resources and prompts follow)."""
    return Shown(name=name)


def list_files(ctx: Any, cursor: str | None) -> ResourcePage:
    return ResourcePage(resources=[ResourceInfo(uri="file-store://logo", name="logo", mime_type="image/png")])


def read_file(ctx: Any, params: dict[str, str]) -> ResourceText | ResourceBlob:
    uri = f"file-store://{params['name']}"
    if params["name"] == "readme":
        return ResourceText(uri=uri, text="read me")
    return ResourceBlob(uri=uri, blob=RAW, mime_type="image/png")


def list_prompts(ctx: Any) -> list[PromptInfo]:
    return [PromptInfo(name="describe", title="Describe", description="Describe the logo")]


def get_prompt(ctx: Any, name: str, arguments: dict[str, str]) -> PromptText:
    return PromptText(
        description="Describe the logo",
        messages=[
            PromptImage(data=RAW, mime_type="image/png"),
            ResourceText(uri="file-store://readme", text="read me", mime_type="text/markdown"),
            ResourceBlob(uri="file-store://logo", blob=RAW, mime_type="image/png"),
            "Describe these.",
        ],
    )


class Files:
    @hookimpl
    def hostd_settings_model(self) -> type[BaseModel] | None:
        return None

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(show_file, access="read")

    @hookimpl
    def hostd_register_resources(self, register: Any) -> None:
        register(
            "file-store://{name}",
            name="file",
            title="File",
            description="A stored file",
            mime_type="application/octet-stream",
            list=list_files,
            read=read_file,
            tool="show_file",
        )

    @hookimpl
    def hostd_register_prompts(self, register: Any) -> None:
        register(list=list_prompts, get=get_prompt, tool="show_file")


async def test_a_binary_resource_is_read_as_a_base64_blob(hostd_data_dir: Path) -> None:
    async with in_memory_client(
        ["files"], data_dir=hostd_data_dir, extra_plugins={"files": Files()}
    ) as client:
        binary = (await client.read_resource("file-store://logo")).contents
        text = (await client.read_resource("file-store://readme")).contents
    assert binary == [
        types.BlobResourceContents(
            uri="file-store://logo", mime_type="image/png", blob=base64.b64encode(RAW).decode()
        )
    ]
    assert isinstance(binary[0], types.BlobResourceContents)
    assert base64.b64decode(binary[0].blob) == RAW
    assert text == [
        types.TextResourceContents(uri="file-store://readme", mime_type="text/plain", text="read me")
    ]


async def test_a_prompt_carries_images_and_embedded_resources(hostd_data_dir: Path) -> None:
    async with in_memory_client(
        ["files"], data_dir=hostd_data_dir, extra_plugins={"files": Files()}
    ) as client:
        got = await client.get_prompt("describe")
    encoded = base64.b64encode(RAW).decode()
    assert [(message.role, message.content) for message in got.messages] == [
        ("user", types.ImageContent(type="image", data=encoded, mime_type="image/png")),
        (
            "user",
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file-store://readme", mime_type="text/markdown", text="read me"
                ),
            ),
        ),
        (
            "user",
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file-store://logo", mime_type="image/png", blob=encoded
                ),
            ),
        ),
        ("user", types.TextContent(type="text", text="Describe these.")),
    ]
