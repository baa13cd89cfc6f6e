"""Every Chinese page of the dashboard, over ASGI, read for English of ours.

The host is seeded through the tools with data that brings out each kind of text a page shows
(``dashboard_support.seed``: a task's history of creation, edits, status moves, a split, a link;
a session from a template, a branch, a revision and its diagram; a memory rolled back, a diff of a
last line without a newline, links both ways; a deleted session). Each page is read in Chinese,
and every Latin word of its text (and of the attributes a person reads or hears: ``title``,
``aria-label``, ``placeholder``, ``alt``, ``data-label``) must be one of the seed's own (what a
member or agent stored: titles, ids, URIs, labels, names), a tool's name, or on the short list
below of things that are Latin in Chinese too. The language links are skipped by their ``lang``.
"""

from __future__ import annotations

import html.parser
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import dashboard_support
import pytest
from dashboard_support import dashboard_app, dashboard_host, member_client, seed, write_tokens
from hostd.core.host import Host
from starlette.testclient import TestClient

#: Latin that a Chinese page may show: the product's name, formats and standards, the time zone.
LATIN = {
    "hostd",
    "UTC",
    "P0",
    "P1",
    "P2",
    "P3",
    "ID",
    "JSON",
    "HTML",
    "Markdown",
    "Mermaid",
    "SVG",
    "URI",
    "MCP",
}
#: Attributes a person reads (or a screen reader says).
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-label")
#: Whose text is not words: scripts and styles, and ``<code>`` (a command, an error code, an id);
#: the diagram's source is read for its labels only.
SKIPPED = ("script", "style", "code")
MEMORY = "project://dashboard"


def memory_page(path: str, **query: str | int) -> str:
    return f"/ui/memory{path}?{urllib.parse.urlencode(query)}"


#: Every page of the seeded dashboard, in Chinese.
PAGES = [
    "/ui/",
    "/ui/members",
    "/ui/tasks",
    "/ui/tasks?status=blocked",
    "/ui/tasks?label=nothing-has-it",
    "/ui/tasks/view?id=t-api",
    "/ui/tasks/view?id=t-db",
    "/ui/tasks/view?id=t-ui",
    "/ui/tasks/view?id=t-xss",
    "/ui/tasks/view?id=t-deploy",
    "/ui/tasks/edit?id=t-api",
    "/ui/tasks/split?id=t-api",
    "/ui/tasks/delete?id=t-db",
    "/ui/deep-thinking",
    "/ui/deep-thinking?template=root_cause_analysis",
    "/ui/deep-thinking?q=PostgreSQL",
    "/ui/deep-thinking/view?id=plan",
    "/ui/deep-thinking/view?id=rca",
    "/ui/deep-thinking/view?id=other",
    "/ui/deep-thinking/delete?id=plan",
    "/ui/deep-thinking/restore",
    "/ui/memory",
    memory_page("/view", uri=MEMORY),
    memory_page("/diff", uri=MEMORY, v1=1, v2=2),
    memory_page("/diff", uri=MEMORY, v1=2, v2=3),
    memory_page("/edit", uri=MEMORY),
    memory_page("/delete", uri=MEMORY),
    "/ui/no-such-page",
]


class Reader(html.parser.HTMLParser):
    """The text a person reads on a page, attribute texts included, the English links left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._skipping: list[str] = []  # open elements whose text is skipped
        self._diagram = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if self._skipping:
            if tag not in ("br", "input", "meta", "link", "img"):
                self._skipping.append(tag)
            return
        if tag in SKIPPED or attributes.get("lang") == "en":
            self._skipping.append(tag)
            return
        self._diagram = tag == "pre" and "mermaid" in (attributes.get("class") or "")
        for name in READ_ATTRIBUTES:
            if attributes.get(name):
                self.texts.append(attributes[name] or "")

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            self._skipping.pop()
        self._diagram = False

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._diagram:  # the words of the diagram: its node, subgraph and edge labels
            data = re.sub(r"#\w+;", " ", data)  # Mermaid's entity codes (#quot;)
            self.texts += re.findall(r'"([^"]*)"', data) + re.findall(r"\|([^|]*)\|", data)
            return
        self.texts.append(data)


def english_words(page: str, allowed: set[str]) -> list[str]:
    reader = Reader()
    reader.feed(page)
    found = []
    for text in reader.texts:
        text = re.sub(r"[a-z][a-z0-9+.-]*://\S*", " ", text)  # URIs are data
        for word, cut in re.findall(r"([A-Za-z][A-Za-z0-9_]*)(…?)", text):
            if len(word) < 2 or word.lower() in allowed:
                continue
            if cut and any(other.startswith(word.lower()) for other in allowed):
                continue  # a stored word shortened to fit
            found.append(word)
    return found


#: Arguments whose values are the tools' own words (a status, a template's id), not a member's:
#: a page names them in its language.
OWN_WORDS = {"new_status", "status", "priority", "template_id", "format"}


def stored_words(values: Any) -> set[str]:
    """The Latin words in what the seed stored (every string it passed to a tool)."""
    words: set[str] = set()
    if isinstance(values, str):
        words.update(word.lower() for word in re.findall(r"[A-Za-z][A-Za-z0-9_]*", values))
    elif isinstance(values, dict):
        for key, value in values.items():
            if key not in OWN_WORDS:
                words |= stored_words(value)
    elif isinstance(values, list | tuple):
        for value in values:
            words |= stored_words(value)
    return words


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Host, Any, set[str]]]:
    stored: set[str] = set(dashboard_support.TOKENS)  # the members' names
    call_as = dashboard_support.call_as

    async def recording(host: Host, member: str, tool: str, **arguments: Any) -> dict[str, Any]:
        stored.update(stored_words(arguments))
        return await call_as(host, member, tool, **arguments)

    monkeypatch.setattr(dashboard_support, "call_as", recording)
    host = dashboard_host(tmp_path / "data")
    try:
        anyio.run(seed, host)
        yield host, dashboard_app(host, write_tokens(tmp_path)), stored
    finally:
        host.shutdown()


def test_every_chinese_page_says_its_own_words_in_chinese(seeded: tuple[Host, Any, set[str]]) -> None:
    host, app, stored = seeded
    allowed = stored | {word.lower() for word in LATIN} | {name.lower() for name in host.tools}
    client = member_client(app, "alice")
    assert client.get("/ui/?lang=zh").status_code == 303
    english: dict[str, list[str]] = {}
    for path in PAGES:
        answer = client.get(path)
        assert answer.status_code in (200, 404), (path, answer.status_code)
        assert 'lang="zh-CN"' in answer.text, path
        assert "`" not in answer.text, path  # Markdown's code quotes, shown as they are
        found = english_words(answer.text, allowed)
        if found:
            english[path] = found
    assert english == {}, "\n".join(f"{path}: {sorted(set(words))}" for path, words in english.items())


def test_the_sign_in_pages_in_chinese(tmp_path: Path) -> None:
    """The one-time link's page (``hostd web``) and the token form (a team server)."""
    from hostd.core.config import TransportConfig
    from hostd.protocol.guard import HttpPolicy
    from hostd.web.serve import local_app
    from hostd.web.signing import OneTimeToken

    host = dashboard_host(tmp_path / "data", language="zh")
    try:
        policy = HttpPolicy(TransportConfig(type="http", host="127.0.0.1", port=8765), host.language)
        local = TestClient(local_app(host, OneTimeToken(), policy), base_url="http://127.0.0.1:8765")
        team = TestClient(dashboard_app(host, write_tokens(tmp_path)), base_url="http://127.0.0.1:8765")
        allowed = {word.lower() for word in LATIN}
        for client in (local, team):
            page = client.get("/ui/signin")
            assert page.status_code == 200
            assert 'lang="zh-CN"' in page.text
            assert "`" not in page.text
            assert english_words(page.text, allowed) == []
        assert "<code>hostd web</code>" in local.get("/ui/signin").text
    finally:
        host.shutdown()
