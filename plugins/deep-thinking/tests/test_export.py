"""export_session / import_session / visualize_session: formats, files inside the roots, golden ASCII."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import sample_session, thought
from hostd_testing import Client, fails, ok

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden"
HOSTILE = (
    '中文 evil </script><script>window.__pwned=1</script> "]-->|x| Z[end] %%{init}%% '
    + ";#35; `md` \x01\x1b[0m 中文"
)


async def test_json_export_is_complete_and_reimportable(client: Client) -> None:
    await sample_session(client, "trip")
    exported = await ok(client, "export_session", session_id="trip", format="json")
    payload = json.loads(exported["content"])
    assert payload["format"] == "hostd-deep-thinking-session"
    assert payload["format_version"] == 1
    assert len(payload["session"]["thoughts"]) == 8
    imported = await ok(client, "import_session", path_or_data=exported["content"], session_id="trip-copy")
    assert imported["session"]["thought_count"] == 8
    assert imported["replaced"] is False
    original = await ok(client, "get_session", session_id="trip")
    copy = await ok(client, "get_session", session_id="trip-copy")
    assert copy["thoughts"] == original["thoughts"]
    assert copy["session"]["branches"] == ["stay-home", "bus"]


@pytest.mark.files_only
async def test_import_over_an_existing_session_needs_overwrite_and_backs_up(
    client: Client, hostd_data_dir: Path
) -> None:
    await sample_session(client, "trip")
    data = (await ok(client, "export_session", session_id="trip", format="json"))["content"]
    await ok(client, "sequential_thinking", **thought(9, 9, "one more", session_id="trip"))
    await fails(client, "import_session", "ALREADY_EXISTS", path_or_data=data)
    backups_before = len(list((hostd_data_dir / "deep-thinking" / "backups" / "trip").glob("*.json")))
    replaced = await ok(client, "import_session", path_or_data=data, overwrite=True)
    assert replaced["replaced"] is True
    assert replaced["session"]["thought_count"] == 8
    backups = sorted((hostd_data_dir / "deep-thinking" / "backups" / "trip").glob("*.json"))
    assert len(backups) > backups_before
    assert any("one more" in path.read_text(encoding="utf-8") for path in backups)


async def test_import_from_a_file_inside_the_roots(client: Client, hostd_roots: Path) -> None:
    await sample_session(client, "trip")
    written = await ok(
        client, "export_session", session_id="trip", format="json", output_path="exports/trip.json"
    )
    assert Path(written["output_path"]) == (hostd_roots / "exports" / "trip.json").resolve()
    imported = await ok(client, "import_session", path_or_data="exports/trip.json", session_id="from-file")
    assert imported["session"]["thought_count"] == 8
    await fails(client, "import_session", "PATH_NOT_ALLOWED", path_or_data="../../etc/passwd")


async def test_import_refuses_what_is_not_a_session(client: Client) -> None:
    await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data="{not json")
    await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data='{"name": "no id"}')
    await fails(
        client, "import_session", "INVALID_ARGUMENT", path_or_data='{"session_id": "../x", "thoughts": []}'
    )
    await fails(
        client,
        "import_session",
        "INVALID_ARGUMENT",
        path_or_data='{"format": "hostd-deep-thinking-session", "format_version": 99, "session": {}}',
    )
    too_long = {"session_id": "big", "thoughts": [{"thought_number": 1, "content": "x" * 10_001}]}
    await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=json.dumps(too_long))


async def test_import_a_spec_shaped_session(client: Client) -> None:
    spec_session = {
        "session_id": "spec-1",
        "name": "问题分析",
        "description": "",
        "status": "completed",
        "created_at": "2025-12-31T00:00:00Z",
        "updated_at": "2025-12-31T00:00:00Z",
        "metadata": {},
        "thoughts": [
            {
                "thought_number": 1,
                "content": "a",
                "type": "regular",
                "is_revision": False,
                "revises_thought": None,
                "branch_from_thought": None,
                "branch_id": None,
                "timestamp": "2025-12-31T00:00:00Z",
            },
            {
                "thought_number": 2,
                "content": "b",
                "type": "revision",
                "is_revision": True,
                "revises_thought": 1,
                "branch_from_thought": None,
                "branch_id": None,
                "timestamp": "2025-12-31T00:00:01Z",
            },
        ],
    }
    imported = await ok(client, "import_session", path_or_data=json.dumps(spec_session, ensure_ascii=False))
    assert imported["session"]["status"] == "completed"
    assert imported["session"]["name"] == "问题分析"
    page = await ok(client, "get_session", session_id="spec-1")
    assert page["thoughts"][1]["revises_sequence"] == 1


async def test_export_writes_inside_roots_only_and_never_overwrites_silently(
    client: Client, hostd_roots: Path
) -> None:
    await sample_session(client, "trip")
    first = await ok(client, "export_session", session_id="trip", format="markdown", output_path="trip.md")
    path = Path(first["output_path"])
    assert path.read_text(encoding="utf-8").startswith("# trip")
    assert first["bytes_written"] == path.stat().st_size
    assert first["content"] is None
    await fails(
        client, "export_session", "ALREADY_EXISTS", session_id="trip", format="text", output_path="trip.md"
    )
    again = await ok(
        client, "export_session", session_id="trip", format="text", output_path="trip.md", overwrite=True
    )
    assert Path(again["output_path"]).read_text(encoding="utf-8").startswith("trip\n")
    for outside in ("../outside.md", "/etc/passwd", "a\x00b.md", str(hostd_roots.parent / "x.md")):
        envelope = await fails(
            client,
            "export_session",
            "PATH_NOT_ALLOWED",
            session_id="trip",
            format="text",
            output_path=outside,
        )
        assert envelope["error"]["details"]["reason"]
    assert not (hostd_roots.parent / "outside.md").exists()


async def test_export_symlink_out_of_roots_is_refused(
    client: Client, hostd_roots: Path, tmp_path: Path
) -> None:
    await sample_session(client, "trip")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, hostd_roots / "link")
    await fails(
        client,
        "export_session",
        "PATH_NOT_ALLOWED",
        session_id="trip",
        format="html",
        output_path="link/x.html",
    )
    assert not list(outside.iterdir())


async def test_markdown_marks_revisions_and_branches(client: Client) -> None:
    await sample_session(client, "trip")
    markdown = (await ok(client, "export_session", session_id="trip", format="markdown"))["content"]
    assert "### Thought 4 · #4 · **revision**" in markdown
    assert "*↩ revises thought 2 (#2)*" in markdown
    assert "## Branch `bus` — from thought 1 (#1)" in markdown
    assert "## Branch `stay-home` — from thought 3 (#3)" in markdown
    assert markdown.index("## Branch `bus`") < markdown.index("Bus to Turin takes 9 hours")


MARKDOWN_THOUGHT = (
    "Compare **both**:\n\n"
    "```python\nif a < b and c > d:\n    print('<tag> & more')\n```\n\n"
    "    indented <code> block\n\n"
    "Inline `x<y` and ``a `<b>` c``, then <b>raw</b> & <script>window.__pwned=1</script>.\n\n"
    "- [click](javascript:window.__pwned=1) ![pic](https://example.invalid/p.png) [ok](https://example.org/)"
)


async def test_markdown_export_keeps_code_verbatim_and_neutralises_raw_html(client: Client) -> None:
    from markdown_it import MarkdownIt

    await ok(client, "sequential_thinking", **thought(1, 1, MARKDOWN_THOUGHT, session_id="md"))
    markdown = (await ok(client, "export_session", session_id="md", format="markdown"))["content"]
    assert "```python\nif a < b and c > d:\n    print('<tag> & more')\n```" in markdown
    assert "    indented <code> block" in markdown
    assert "`x<y`" in markdown
    assert "``a `<b>` c``" in markdown
    # Rendered as a viewer with raw HTML on would: code shows as written, no tag gets through.
    rendered = MarkdownIt("commonmark").render(markdown)
    assert "if a &lt; b and c &gt; d:\n    print('&lt;tag&gt; &amp; more')" in rendered
    assert "<code>x&lt;y</code>" in rendered
    assert "<code>a `&lt;b&gt;` c</code>" in rendered
    assert "<b>" not in rendered
    assert "<script" not in rendered
    assert "&lt;b&gt;raw&lt;/b&gt; &amp; &lt;script&gt;" in rendered


async def test_html_export_renders_markdown_safely(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 1, MARKDOWN_THOUGHT, session_id="md"))
    page = (await ok(client, "export_session", session_id="md", format="html"))["content"]
    assert "<strong>both</strong>" in page
    assert '<pre><code class="language-python">if a &lt; b and c &gt; d:\n    print(' in page
    assert "<code>x&lt;y</code>" in page
    assert "&lt;b&gt;raw&lt;/b&gt;" in page
    assert "<b>raw" not in page
    assert "<script" not in page.lower().replace("&lt;script", "")
    assert "javascript:" not in page.replace("[click](javascript:", "")
    assert "<img" not in page
    assert "src=" not in page
    assert '<a href="https://example.org/"' in page


async def test_text_export_lists_every_thought(client: Client) -> None:
    await sample_session(client, "trip")
    text = (await ok(client, "export_session", session_id="trip", format="text"))["content"]
    assert text.count("\n[") + text.count("\n  [") == 8
    assert "revises thought 2" in text


async def test_html_export_is_self_contained_and_escaped(client: Client) -> None:
    await sample_session(client, "trip")
    await ok(client, "sequential_thinking", **thought(6, 6, HOSTILE, session_id="trip"))
    page = (await ok(client, "export_session", session_id="trip", format="html"))["content"]
    assert "<script" not in page.lower().replace("&lt;script", "")
    assert re.search(r"<meta http-equiv=\"Content-Security-Policy\" content=\"[^\"]*script-src 'none'", page)
    assert "default-src 'none'" in page
    assert "http://" not in page
    assert "https://" not in page
    assert "src=" not in page
    assert page.count('<li class="thought') == 9
    for seq in range(1, 10):
        assert f'id="thought-{seq}"' in page
    assert '<a class="revises" href="#thought-2">' in page
    assert '<section class="branch" id="branch-bus"' in page
    assert 'id="branch-stay-home"' in page
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "\x01" not in page
    assert "\x1b" not in page


async def test_mermaid_structure(client: Client) -> None:
    await sample_session(client, "trip")
    await ok(
        client,
        "sequential_thinking",
        **thought(7, 7, "dangling", isRevision=True, revisesThought=42, session_id="trip"),
    )
    diagram = (await ok(client, "visualize_session", session_id="trip", format="mermaid"))["diagram"]
    lines = [line.strip() for line in diagram.splitlines()]
    assert lines[0] == "flowchart TD"
    assert "t1 --> t2" in lines
    assert "t2 --> t3" in lines
    assert "t3 --> t4" in lines
    assert "t4 --> t8" in lines
    assert "t4 -.->|revises| t2" in lines
    assert "t3 --> t5" in lines
    assert "t1 --> t6" in lines
    assert "t6 --> t7" in lines
    assert any(line.startswith('subgraph b1["branch stay-home"]') for line in lines)
    assert "t9 -.->|revises| m1" in lines
    assert any(line.startswith('m1(["42 (missing)"])') for line in lines)


async def test_mermaid_labels_cannot_break_out(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 1, HOSTILE, session_id="evil"))
    diagram = (await ok(client, "visualize_session", session_id="evil", format="mermaid"))["diagram"]
    label_line = next(line for line in diagram.splitlines() if line.strip().startswith("t1["))
    inner = label_line.strip()[len('t1["') : -len('"]')]
    # Nothing that ends a quoted label, starts markup or an entity, or makes a %%{init}%% directive.
    assert not any(mark in inner for mark in ('"', "<", ">", "&", "%%", "`", "|")), inner
    assert re.fullmatch(r"(?:[^#]|#(?:\d+|quot|amp|lt|gt);)*", inner), "every # starts one of our codes"
    assert "中文" in inner
    assert [line for line in diagram.splitlines() if "中文" in line] == [label_line]


async def test_mermaid_labels_stay_readable(client: Client) -> None:
    """CJK punctuation and harmless ASCII are written as they are; only what Mermaid needs is encoded."""
    text = "第1步：分析**缓存**，“命中率”（约 50%）; a-b_c. [x] {y} ~ ! ? \\ @ ' 。"
    await ok(client, "sequential_thinking", **thought(1, 1, text, session_id="readable"))
    diagram = (await ok(client, "visualize_session", session_id="readable", format="mermaid"))["diagram"]
    label_line = next(line for line in diagram.splitlines() if line.strip().startswith("t1["))
    assert label_line.strip() == f't1["1: {text}"]', label_line
    tagged = thought(2, 2, 'say "hi" <b>#1</b> & 100%% | `x`', session_id="readable", stage="Analysis")
    await ok(client, "sequential_thinking", **tagged)
    diagram = (await ok(client, "visualize_session", session_id="readable", format="mermaid"))["diagram"]
    label_line = next(line for line in diagram.splitlines() if line.strip().startswith("t2["))
    assert label_line.strip() == (
        't2["2 [Analysis]: say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #amp; 100#37;#37; #124; #96;x#96;"]'
    ), label_line


async def test_ascii_matches_the_golden_file(client: Client) -> None:
    await sample_session(client, "trip")
    diagram = (await ok(client, "visualize_session", session_id="trip", format="ascii"))["diagram"]
    golden = GOLDEN / "trip.ascii.txt"
    if os.environ.get("HOSTD_UPDATE_GOLDEN") == "1":
        golden.write_text(diagram, encoding="utf-8")
    assert diagram == golden.read_text(encoding="utf-8")


async def test_ascii_with_dangling_references_matches_the_golden_file(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 2, "Start", session_id="loose"))
    await ok(
        client,
        "sequential_thinking",
        **thought(2, 2, "Fix an earlier idea", isRevision=True, revisesThought=9, session_id="loose"),
    )
    await ok(
        client,
        "sequential_thinking",
        **thought(3, 2, "Side path", branchFromThought=8, branchId="side", session_id="loose", more=False),
    )
    diagram = (await ok(client, "visualize_session", session_id="loose", format="ascii"))["diagram"]
    golden = GOLDEN / "dangling.ascii.txt"
    if os.environ.get("HOSTD_UPDATE_GOLDEN") == "1":
        golden.write_text(diagram, encoding="utf-8")
    assert diagram == golden.read_text(encoding="utf-8")


# --- imports that are not sessions: refused, nothing created --------------------------


async def assert_nothing_stored(client: Client) -> None:
    assert (await ok(client, "list_sessions"))["total"] == 0


@pytest.mark.parametrize("document", ["[1,2,3]", '"just a string"', "  [ ]"])
async def test_import_of_json_that_is_not_an_object_says_so(client: Client, document: str) -> None:
    envelope = await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=document)
    assert envelope["error"]["details"]["argument"] == "path_or_data"
    assert "not a session" in envelope["message"]
    await assert_nothing_stored(client)


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({}, "thoughts"),
        (
            {"format": "something-else", "format_version": 1, "session": {"session_id": "x", "thoughts": []}},
            "format",
        ),
        ({"session": {"session_id": "x", "thoughts": []}}, "format"),
        ({"session_id": "x", "entries": [{"text": "t"}] * 50}, "thoughts"),
        ({"session_id": "x", "thoughts": [{"text": "foreign"}]}, "thoughts.0.thought_number"),
    ],
)
async def test_import_of_a_document_that_is_not_a_session_export_creates_nothing(
    client: Client, document: dict[str, Any], field: str
) -> None:
    envelope = await fails(
        client, "import_session", "INVALID_ARGUMENT", path_or_data=json.dumps(document), session_id="target"
    )
    assert envelope["error"]["details"]["field"] == field
    assert field in envelope["message"]
    await assert_nothing_stored(client)


async def test_import_of_a_large_foreign_document_creates_nothing(client: Client) -> None:
    foreign = {"id": "x", "steps": [{"n": n, "body": "y" * 8_000} for n in range(5_000)]}
    data = json.dumps(foreign)
    assert len(data) > 40_000_000
    envelope = await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=data, session_id="big")
    assert envelope["error"]["details"]["field"] == "thoughts"
    await assert_nothing_stored(client)


async def test_an_exported_empty_session_still_imports(client: Client) -> None:
    await ok(client, "create_session", name="empty", session_id="empty")
    data = (await ok(client, "export_session", session_id="empty", format="json"))["content"]
    imported = await ok(client, "import_session", path_or_data=data, session_id="empty-copy")
    assert imported["session"]["thought_count"] == 0


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


async def test_deeply_nested_import_is_refused_and_poisons_nothing(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 1, session_id="fine"))
    document = {"session_id": "deep", "metadata": nested(300), "thoughts": []}
    envelope = await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=json.dumps(document))
    assert envelope["error"]["details"]["field"] == "metadata"
    assert "nested" in envelope["message"]
    listed = await ok(client, "list_sessions")
    assert [s["session_id"] for s in listed["sessions"]] == ["fine"]
    await fails(client, "get_session", "NOT_FOUND", session_id="deep")
    # Deeper than the JSON parser itself can go: still a clear refusal, not INTERNAL.
    too_deep = '{"session_id": "d", "thoughts": [], "metadata": ' + '{"a":' * 100_000 + "1" + "}" * 100_001
    await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=too_deep)
    await ok(client, "get_session", session_id="fine")


async def test_create_session_refuses_deeply_nested_metadata(client: Client) -> None:
    envelope = await fails(client, "create_session", "INVALID_ARGUMENT", name="x", metadata=nested(100))
    assert envelope["error"]["details"]["argument"] == "metadata"
    assert (await ok(client, "list_sessions"))["total"] == 0


@pytest.mark.parametrize(
    "metadata", [r'{"k": "v\udc00"}', r'{"k\ud800": "v"}', r'{"k": [{"deep": "\udfff"}]}']
)
async def test_lone_surrogates_in_imported_metadata_are_refused(client: Client, metadata: str) -> None:
    """JSON may spell a lone surrogate ("\\udc00"); no UTF-8 file or database can keep it."""
    data = '{"session_id": "u4", "thoughts": [], "metadata": ' + metadata + "}"
    envelope = await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=data)
    assert envelope["error"]["details"]["field"] == "metadata"
    assert "Unicode" in envelope["message"]
    await assert_nothing_stored(client)


@pytest.mark.parametrize("metadata", [{"k": "v\udc00"}, {"k": ["\udfff"]}])
async def test_create_session_refuses_lone_surrogates_in_metadata(
    client: Client, metadata: dict[str, Any]
) -> None:
    envelope = await fails(client, "create_session", "INVALID_ARGUMENT", name="x", metadata=metadata)
    assert envelope["error"]["details"] == {"argument": "metadata", "problem": "not_unicode"}
    assert (await ok(client, "list_sessions"))["total"] == 0


def test_create_session_refuses_a_lone_surrogate_in_a_metadata_key(tmp_path: Path, hostd_roots: Path) -> None:
    """Through ``hostd call``: the SDK's client cannot even send such a key, a raw JSON reader can."""
    envelope = call_through_cli(
        tmp_path, hostd_roots, "create_session", r'{"name": "x", "metadata": {"k\ud800": "v"}}'
    )
    assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    assert envelope["error"]["details"] == {"argument": "metadata", "problem": "not_unicode"}
    listed = call_through_cli(tmp_path, hostd_roots, "list_sessions", "{}")
    assert listed["total"] == 0


def call_through_cli(tmp_path: Path, hostd_roots: Path, tool: str, arguments: str) -> dict[str, Any]:
    import subprocess
    import sys

    from deep_thinking_support import PLUGIN, config_for
    from hostd_testing import write_config

    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    command = [sys.executable, "-m", "hostd", "--config", str(config), "call", tool, "--json", arguments]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    envelope: dict[str, Any] = json.loads(result.stdout)
    return envelope


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_refused_on_import(client: Client, constant: str) -> None:
    data = '{"session_id": "n", "metadata": {"x": ' + constant + '}, "thoughts": []}'
    envelope = await fails(client, "import_session", "INVALID_ARGUMENT", path_or_data=data)
    assert constant.lstrip("-") in envelope["message"]
    await assert_nothing_stored(client)


def test_nan_in_metadata_is_refused_by_create_session(tmp_path: Path, hostd_roots: Path) -> None:
    """Through ``hostd call`` (Python's JSON reader accepts NaN, as the server's JSON-RPC reader does)."""
    import subprocess
    import sys

    from deep_thinking_support import PLUGIN, config_for
    from hostd_testing import write_config

    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hostd",
            "--config",
            str(config),
            "call",
            "create_session",
            "--json",
            '{"name": "x", "metadata": {"x": NaN}}',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    envelope = json.loads(result.stdout)
    assert result.returncode == 1, envelope
    assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    assert envelope["error"]["details"] == {"argument": "metadata", "problem": "not_finite"}


async def test_import_refusals_in_chinese_have_no_english(hostd_data_dir: Path, hostd_roots: Path) -> None:
    from deep_thinking_support import PLUGIN, config_for
    from hostd_testing import in_memory_client

    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        for data in ("[1]", "{}", json.dumps({"session_id": "d", "metadata": nested(300), "thoughts": []})):
            envelope = await fails(zh, "import_session", "INVALID_ARGUMENT", path_or_data=data)
            assert not re.search(r"\b(expected|missing|nested|object|field)\b", envelope["message"]), envelope
            assert "导入内容" in envelope["message"], envelope


@pytest.mark.parametrize(
    "text",
    [
        "```\nunclosed <x> fence",
        "a\r\nb <i>c</i>\r\n```\n<d>\n```",
        "x\u2028<i>y</i>\n\n    <code-block>",
        "`unbalanced <i>x</i>",
        "> quote <i>x</i>\n> ```\n> <k>\n> ```",
        "- item\n\n  ```\n  <in-list>\n  ```\n- <i>raw</i>",
    ],
)
def test_markdown_text_never_lets_a_tag_through(text: str) -> None:
    from hostd_deep_thinking.export import _md
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(_md(text))
    assert "<i>" not in rendered
    stripped = re.sub(r"</?(p|pre|code|blockquote|ul|ol|li)>|<code class=\"[^\"]*\">", "", rendered)
    assert "<" not in stripped.replace("&lt;", ""), rendered


def test_an_import_keeps_no_utf8_copy_of_its_thoughts() -> None:
    """pydantic's max_length check left a UTF-8 copy inside every thought it checked: a 30 MB
    Chinese import held 30 MB more for as long as the session stayed cached."""
    import tracemalloc

    from hostd_deep_thinking.importing import parse_import

    content = "分析缓存命中率" * 1_400  # 9,800 characters
    raw = {
        "session_id": "large",
        "thoughts": [{"thought_number": n, "content": content + str(n)} for n in range(1, 201)],
    }
    tracemalloc.start()
    try:
        document = parse_import(raw, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(document["thoughts"]) == 200
    assert peak < 2_000_000  # the UTF-8 copies alone were 200 x 29 KB = 5.9 MB
