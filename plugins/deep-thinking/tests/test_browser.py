"""The HTML export and the Mermaid output in a real headless Chromium (Debian's), via Playwright."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from deep_thinking_support import PLUGIN, config_for, sample_session, thought
from hostd_testing import in_memory_client, ok

HOSTILE_THOUGHTS = [
    "</script><script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '"]--> X["pwned"] --> Y',
    "end\nsubgraph evil\nclick t1 call alert()\n%%{init: {'securityLevel': 'loose'}}%%",
    "A -.->|label| B; classDef x fill:#f00; ;;; ### &amp; &#35; #quot; `code` {braces} (parens) [brackets]",
    "control \x00\x01\x07\x1b[31m chars \u202e reversed \u200b zero-width",
    "中文：括号（）【】“引号”，标点。😀",
    "x" * 10_000,
]


def export_and_diagram(data_dir: Path, roots: Path) -> tuple[str, str]:
    """The sample session plus every hostile thought, as an HTML page and a Mermaid diagram."""

    async def build() -> tuple[str, str]:
        async with in_memory_client([PLUGIN], data_dir=data_dir, config=config_for(roots)) as client:
            await sample_session(client, "trip")
            for offset, text in enumerate(HOSTILE_THOUGHTS, start=6):
                await ok(client, "sequential_thinking", **thought(offset, offset, text, session_id="trip"))
            await ok(
                client,
                "sequential_thinking",
                **thought(
                    20, 20, "revises a missing thought", isRevision=True, revisesThought=99, session_id="trip"
                ),
            )
            page = await ok(client, "export_session", session_id="trip", format="html")
            diagram = await ok(client, "visualize_session", session_id="trip", format="mermaid")
            return page["content"], diagram["diagram"]

    # Playwright's sync API runs an event loop in this thread: build the session in another one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, build).result()


@pytest.fixture
def exported(tmp_path: Path) -> tuple[str, str]:
    data, roots = tmp_path / "data", tmp_path / "roots"
    data.mkdir()
    roots.mkdir()
    return export_and_diagram(data, roots)


def test_html_export_in_chromium(browser: Any, exported: tuple[str, str], tmp_path: Path) -> None:
    html, _ = exported
    page_file = tmp_path / "trip.html"
    page_file.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        page.goto(page_file.as_uri())
        total = 8 + len(HOSTILE_THOUGHTS) + 1
        assert page.locator("li.thought").count() == total
        for seq in range(1, total + 1):
            assert page.locator(f"#thought-{seq}").count() == 1
        revision = page.locator("#thought-4 a.revises")
        assert revision.get_attribute("href") == "#thought-2"
        revision.click()
        assert page.evaluate("location.hash") == "#thought-2"
        assert page.locator("#thought-17 .ref.dangling").count() == 1  # revises thought 99: not there
        branches = page.locator("section.branch")
        assert branches.count() == 2
        assert page.locator("#branch-bus li.thought").count() == 2
        assert page.locator("#branch-bus a.branch-origin").get_attribute("href") == "#thought-1"
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.images.length") == 0
        shown = page.locator("#thought-9 .content").inner_text()
        assert "</script><script>window.__pwned = 1</script>" in shown
        shot = tmp_path / "trip.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000
    finally:
        page.close()


def test_the_csp_stops_a_script_even_if_one_got_in(
    browser: Any, exported: tuple[str, str], tmp_path: Path
) -> None:
    html, _ = exported
    injected = html.replace("<body>", "<body><script>window.__pwned = 1</script>", 1)
    page_file = tmp_path / "injected.html"
    page_file.write_text(injected, encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(page_file.as_uri())
        assert page.evaluate("document.scripts.length") == 1
        assert page.evaluate("typeof window.__pwned") == "undefined"
    finally:
        page.close()


def test_mermaid_parses_and_renders_hostile_thoughts(
    browser: Any, mermaid_js: Path, exported: tuple[str, str]
) -> None:
    _, diagram = exported
    page = browser.new_page()
    try:
        page.set_content("<!DOCTYPE html><html><body><div id='out'></div></body></html>")
        page.add_script_tag(path=str(mermaid_js))
        result = page.evaluate(
            """async (text) => {
                mermaid.initialize({startOnLoad: false, securityLevel: 'strict'});
                try { await mermaid.parse(text); }
                catch (error) { return {parsed: false, error: String(error)}; }
                const {svg} = await mermaid.render('graph', text);
                document.getElementById('out').innerHTML = svg;
                return {parsed: true, text: document.getElementById('out').textContent};
            }""",
            diagram,
        )
        assert result["parsed"], result.get("error")
        assert "revises" in result["text"]
        assert "Define the goal" in result["text"]
        assert page.evaluate("typeof window.__pwned") == "undefined"
        for text in HOSTILE_THOUGHTS[:3]:
            single = page.evaluate(
                """async (text) => { try { await mermaid.parse(text); return true; }
                                     catch (error) { return String(error); } }""",
                diagram_for(text),
            )
            assert single is True, single
        broken = page.evaluate(
            'async () => { try { await mermaid.parse(\'flowchart TD\\n a["x"]"] --> b\'); return true; }'
            " catch (error) { return false; } }"
        )
        assert broken is False  # the parser does reject bad syntax, so the checks above mean something
    finally:
        page.close()


def diagram_for(text: str, language: str = "en") -> str:
    from hostd_deep_thinking.store import SessionState, new_document
    from hostd_deep_thinking.visualize import to_mermaid

    state = SessionState.from_document(new_document("one", name="one"))
    state.apply({"seq": 1, "thought_number": 1, "content": text, "type": "regular"}, None)
    diagram: str = to_mermaid(state, language)
    return diagram


MARKDOWN_ATTACKS = "\n\n".join(
    [
        "**Rendered** with `<code>` kept:\n\n```html\n<script>window.__pwned = 1</script>\n```",
        "<script>window.__pwned = 1</script>",
        '<img src=x onerror="window.__pwned = 1">',
        "[click me](javascript:window.__pwned=1) [also](JAVASCRIPT:window.__pwned=1)",
        "![pic](x onerror=window.__pwned=1) ![data](data:image/svg+xml,<svg onload=alert(1)>)",
        '<a href="javascript:window.__pwned=1">raw link</a>',
    ]
)


def test_markdown_in_thoughts_renders_and_runs_nothing(browser: Any, tmp_path: Path) -> None:
    data, roots = tmp_path / "data", tmp_path / "roots"
    data.mkdir()
    roots.mkdir()

    async def build() -> str:
        async with in_memory_client([PLUGIN], data_dir=data, config=config_for(roots)) as client:
            await ok(client, "sequential_thinking", **thought(1, 1, MARKDOWN_ATTACKS, session_id="md"))
            return str((await ok(client, "export_session", session_id="md", format="html"))["content"])

    with ThreadPoolExecutor(max_workers=1) as pool:
        html = pool.submit(anyio.run, build).result()
    page_file = tmp_path / "md.html"
    page_file.write_text(html, encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(page_file.as_uri())
        content = page.locator("#thought-1 .content")
        assert content.locator("strong").inner_text() == "Rendered"
        assert content.locator("pre code").inner_text().strip() == "<script>window.__pwned = 1</script>"
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("document.images.length") == 0
        hrefs = page.evaluate("Array.from(document.querySelectorAll('a[href]'), a => a.href)")
        assert not [href for href in hrefs if not href.startswith("file:")], hrefs  # only in-page links
        page.get_by_text("click me").click()
        page.get_by_text("raw link").click()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert "<img" in content.inner_text()
        assert "<script>" in content.inner_text()
    finally:
        page.close()
