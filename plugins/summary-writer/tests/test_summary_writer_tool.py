"""update_summary through a real MCP client: the spec's examples, argument rules, roots.

Most tests run twice (``connect`` fixture): against the host in-process and against a real
``hostd serve`` subprocess over stdio.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dirty_equals import IsStr
from hostd_testing import Connect, envelope_error, fuzz_tools, in_memory_client
from summary_writer_support import HEADINGS, TOOL, host_config, separator_pattern, update

pytestmark = pytest.mark.anyio


# --- the tool as listed -------------------------------------------------------------------


@pytest.mark.smoke
async def test_tool_is_listed_with_annotations_true_to_it(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots])) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    tool = tools[TOOL]
    assert tool.annotations is not None
    assert tool.description is not None
    assert tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is True
    assert tool.annotations.idempotent_hint is False
    assert "REPLACES THE WHOLE FILE" in tool.description
    schema = tool.input_schema
    assert schema["required"] == ["content", "file_path"]
    assert schema["properties"]["mode"]["enum"] == ["append", "overwrite"]
    assert schema["properties"]["mode"]["default"] == "append"
    assert all(prop["description"] for prop in schema["properties"].values())


# --- the spec's examples ------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.served
async def test_append_to_missing_file_creates_it_and_its_folders(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots], "zh")) as client:
        envelope = await update(client, content="# 第一次总结\n\n要点。", file_path="notes/2024/a.md")
    target = hostd_roots / "notes" / "2024" / "a.md"
    assert target.read_text(encoding="utf-8") == "# 第一次总结\n\n要点。"
    expected_bytes = len("# 第一次总结\n\n要点。".encode())
    assert {k: v for k, v in envelope.items() if k != "metadata"} == {
        "status": "success",
        "message": f"总结已写入新创建的文件：{target}",
        "file_path": str(target),
        "mode": "append",
        "bytes_written": expected_bytes,
        "created": True,
        "separator_added": False,
    }
    assert envelope["metadata"]["execution_time_ms"] >= 0


@pytest.mark.parametrize("language", ["zh", "en"])
async def test_append_to_existing_file_adds_timestamped_separator(
    connect: Connect, hostd_roots: Path, language: str
) -> None:
    target = hostd_roots / "summary.md"
    target.write_text("旧内容", encoding="utf-8")
    async with connect(config=host_config([hostd_roots], language)) as client:
        envelope = await update(client, content="新的总结", file_path=str(target), mode="append")
    text = target.read_text(encoding="utf-8")
    assert text.startswith("旧内容")
    assert text.endswith("新的总结")
    separator = text[len("旧内容") : -len("新的总结")]
    assert separator_pattern(HEADINGS[language]).fullmatch(separator), repr(separator)
    assert envelope["bytes_written"] == len(separator.encode()) + len("新的总结".encode())
    assert envelope["created"] is False
    assert envelope["separator_added"] is True
    expected = {"zh": f"总结已成功追加至文件：{target}", "en": f"Summary appended to file: {target}"}
    assert envelope["message"] == expected[language]


async def test_append_to_empty_file_writes_content_alone(connect: Connect, hostd_roots: Path) -> None:
    target = hostd_roots / "empty.md"
    target.touch()
    async with connect(config=host_config([hostd_roots])) as client:
        envelope = await update(client, content="only this", file_path="empty.md")
    assert target.read_text() == "only this"
    assert envelope["created"] is False
    assert envelope["separator_added"] is False


async def test_overwrite_replaces_the_whole_file(connect: Connect, hostd_roots: Path) -> None:
    target = hostd_roots / "a.markdown"
    target.write_text("old " * 1000)
    async with connect(config=host_config([hostd_roots], "zh")) as client:
        envelope = await update(client, content="new", file_path="a.markdown", mode="overwrite")
        created = await update(client, content="fresh", file_path="b.MD", mode="overwrite")
    assert target.read_text() == "new"
    assert envelope["mode"] == "overwrite"
    assert envelope["bytes_written"] == 3
    assert envelope["created"] is False
    assert envelope["separator_added"] is False
    assert envelope["message"] == f"总结已成功覆盖写入文件：{target}"
    assert (hostd_roots / "b.MD").read_text() == "fresh"
    assert created["created"] is True


async def test_separator_heading_comes_from_settings(connect: Connect, hostd_roots: Path) -> None:
    target = hostd_roots / "s.md"
    async with connect(config=host_config([hostd_roots], "zh", separator_heading="Weekly notes")) as client:
        await update(client, content="one", file_path="s.md")
        await update(client, content="two", file_path="s.md")
    first, second = separator_pattern("Weekly notes").split(target.read_text())
    assert (first, second) == ("one", "two")


# --- argument rules -----------------------------------------------------------------------

BLANK_CONTENTS = ["", " ", "\t\n\r ", "\u3000\u3000", "\u200b", " \u200b\u3000\n\ufeff\u2060\u00a0"]


@pytest.mark.parametrize("language", ["zh", "en"])
async def test_blank_content_is_invalid_and_touches_nothing(
    connect: Connect, hostd_roots: Path, language: str
) -> None:
    target = hostd_roots / "a.md"
    target.write_text("kept")
    async with connect(config=host_config([hostd_roots], language)) as client:
        envelopes = [await update(client, content=blank, file_path="a.md") for blank in BLANK_CONTENTS]
    for blank, envelope in zip(BLANK_CONTENTS, envelopes, strict=True):
        assert envelope["status"] == "error", repr(blank)
        assert envelope["error"]["code"] == "INVALID_ARGUMENT", repr(blank)
        assert "content" in envelope["message"]
        assert envelope["error"]["hint"]
    if language == "zh":
        assert "不能为空" in envelopes[-1]["message"]
    assert target.read_text() == "kept"


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("en", "Invalid file_path: must end with .md or .markdown"),
        ("zh", "无效的 file_path：必须以 .md 或 .markdown 结尾"),
    ],
)
async def test_file_path_must_be_markdown(
    connect: Connect, hostd_roots: Path, language: str, message: str
) -> None:
    bad_paths = ["notes.txt", "notes", "a.md.txt", "a.md/", "a.md.", "a.mdx", "/etc/passwd"]
    async with connect(config=host_config([hostd_roots], language)) as client:
        envelopes = [await update(client, content="x", file_path=path) for path in bad_paths]
        accepted = [await update(client, content="x", file_path=path) for path in ["A.MD", "b.Markdown"]]
    for path, envelope in zip(bad_paths, envelopes, strict=True):
        assert envelope["error"]["code"] == "INVALID_ARGUMENT", path
        assert envelope["message"] == message
        assert envelope["error"]["message"] == message
        assert envelope["error"]["hint"]
    assert [e["status"] for e in accepted] == ["success", "success"]
    assert sorted(os.listdir(hostd_roots)) == ["A.MD", "b.Markdown"]


async def test_content_over_the_cap_is_too_long(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots], max_content_bytes=10)) as client:
        at_cap = await update(client, content="一二三x", file_path="a.md")  # 10 bytes of UTF-8
        over = await update(client, content="一二三xy", file_path="a.md")
    assert at_cap["status"] == "success"
    assert over == envelope_error(
        "TOO_LONG",
        "Content is too long: 11 bytes of UTF-8, the limit is 10",
        hint=IsStr(regex=r".*max_content_bytes.*"),
        details={"argument": "content", "bytes": 11, "max_bytes": 10},
    )
    assert (hostd_roots / "a.md").read_text() == "一二三x"


async def test_default_cap_is_one_mebibyte(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(data_dir=hostd_data_dir, config=host_config([hostd_roots])) as client:
        at_cap = await update(client, content="x" * (1 << 20), file_path="big.md", mode="overwrite")
        over = await update(client, content="x" * ((1 << 20) + 1), file_path="big.md", mode="overwrite")
    assert at_cap["status"] == "success"
    assert at_cap["bytes_written"] == 1 << 20
    assert over["error"]["code"] == "TOO_LONG"


async def test_directory_at_the_path_is_invalid_argument(connect: Connect, hostd_roots: Path) -> None:
    (hostd_roots / "folder.md").mkdir()
    async with connect(config=host_config([hostd_roots])) as client:
        envelope = await update(client, content="x", file_path="folder.md")
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["hint"]
    assert (hostd_roots / "folder.md").is_dir()


async def test_lone_surrogates_are_invalid_argument(hostd_data_dir: Path, hostd_roots: Path) -> None:
    # JSON may carry "\\ud800"; no file can hold it. In-process only: the stdio client cannot encode it.
    async with in_memory_client(data_dir=hostd_data_dir, config=host_config([hostd_roots])) as client:
        in_content = await update(client, content="bad \ud800 text", file_path="a.md")
        in_path = await update(client, content="good", file_path="bad\ud800.md")
    assert in_content["error"]["code"] == "INVALID_ARGUMENT"
    assert in_content["error"]["details"]["argument"] == "content"
    assert in_path["error"]["code"] == "INVALID_ARGUMENT"
    assert in_path["error"]["details"]["argument"] == "file_path"
    assert os.listdir(hostd_roots) == []


@pytest.mark.served
async def test_fuzz(connect: Connect, hostd_roots: Path) -> None:
    async with connect(config=host_config([hostd_roots])) as client:
        report = await fuzz_tools(client, seed=3, rounds=40)
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures
    assert report.codes.get("OK", 0) > 0, report.codes


async def test_plugin_settings_are_validated(hostd_data_dir: Path, hostd_roots: Path) -> None:
    from hostd_testing import HostError

    with pytest.raises(HostError, match="max_content_bytes"):
        async with in_memory_client(
            data_dir=hostd_data_dir, config=host_config([hostd_roots], max_content_bytes=0)
        ):
            pass
    with pytest.raises(HostError, match="separator_heading"):
        async with in_memory_client(
            data_dir=hostd_data_dir, config=host_config([hostd_roots], separator_heading="a\nb")
        ):
            pass
