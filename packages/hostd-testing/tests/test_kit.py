"""The plugin author's kit itself: ``make_host``, ``connect`` and ``check_paging``, each against a
small in-line plugin, and ``check_paging`` failing on listings that break the paging rule (a
suite that cannot fail would prove nothing in the plugins that run it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import pytest
from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, Page, decode_cursor, encode_cursor, int_position
from hostd_testing import Client, in_memory_client
from hostd_testing.calls import call, envelope_ok
from hostd_testing.connecting import Connect
from hostd_testing.hosts import local_member, make_host
from hostd_testing.suites import check_paging
from pydantic import Field

from hostd import ToolContext, hookimpl

ITEMS = [f"item-{n}" for n in range(7)]
Flaw = Literal["none", "repeats", "unbound", "never_truncated", "drops_last"]


class Shelf(Page):
    items: list[str]
    total: int


def shelf_plugin(flaw: Flaw = "none") -> object:
    """A plugin with one listing, ``list_shelf``, paging right or with one ``flaw``."""

    def list_shelf(
        ctx: ToolContext[Any],
        kind: Annotated[Literal["even", "all"], Field(description="Which items")] = "all",
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> Shelf:
        """Items on the shelf, a page at a time."""
        chosen = [item for n, item in enumerate(ITEMS) if kind == "all" or n % 2 == 0]
        if flaw == "drops_last":
            chosen = chosen[:-1] if limit < len(chosen) else chosen
        filters = {} if flaw == "unbound" else {"kind": kind}
        start = int_position(decode_cursor(cursor, "list_shelf", filters)) or 0
        if flaw == "repeats" and start:
            start -= 1
        page = chosen[start : start + limit]
        more = start + limit < len(chosen)
        return Shelf(
            items=page,
            total=len(chosen),
            next_cursor=encode_cursor("list_shelf", filters, start + limit) if more else None,
            truncated=more and flaw != "never_truncated",
        )

    class Plugin:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(list_shelf, title="List the shelf", access="read")

        @hookimpl
        def hostd_register_services(self, register: Any) -> None:
            register("shelf.size", lambda: len(ITEMS))

    return Plugin()


pytestmark = pytest.mark.anyio


async def test_check_paging_passes_a_listing_that_pages_right(hostd_data_dir: Path) -> None:
    async with in_memory_client(
        ["shelf"], data_dir=hostd_data_dir, extra_plugins={"shelf": shelf_plugin()}
    ) as client:
        walked = await check_paging(client, "list_shelf", "items", other_filters={"kind": "even"})
    assert walked == ITEMS


@pytest.mark.parametrize("flaw", ["repeats", "unbound", "never_truncated", "drops_last"])
async def test_check_paging_fails_a_listing_that_breaks_the_rule(hostd_data_dir: Path, flaw: Flaw) -> None:
    async with in_memory_client(
        ["shelf"], data_dir=hostd_data_dir, extra_plugins={"shelf": shelf_plugin(flaw)}
    ) as client:
        with pytest.raises(AssertionError):
            await check_paging(client, "list_shelf", "items", other_filters={"kind": "even"})


def test_make_host_calls_as_a_member_and_offers_services(hostd_data_dir: Path) -> None:
    with make_host(["shelf"], data_dir=hostd_data_dir, extra_plugins={"shelf": shelf_plugin()}) as host:
        answer = anyio.run(host.ok, "list_shelf", {"limit": 2})
        refused, is_error = anyio.run(host.call, "list_shelf", {"limit": 0})
        size = host.service("shelf.size")
        assert host.service("nobody.offers") is None
    assert answer == envelope_ok(items=ITEMS[:2], total=7, next_cursor=answer["next_cursor"], truncated=True)
    assert is_error
    assert refused["error"]["code"] == "INVALID_ARGUMENT"
    assert size() == 7
    assert local_member()


@pytest.fixture
def hostd_plugins() -> list[str]:
    return ["shelf"]


@pytest.fixture
def hostd_config() -> dict[str, Any]:
    return {"language": "zh"}


async def test_connect_starts_from_the_suites_plugins_and_config(connect_in_memory: Connect) -> None:
    async with connect_in_memory(extra_plugins={"shelf": shelf_plugin()}) as client:
        assert isinstance(client, Client)
        tools = [tool.name for tool in (await client.list_tools()).tools]
        refused = await call(client, "list_shelf", limit=0)
    async with connect_in_memory(extra_plugins={"shelf": shelf_plugin()}, language="en") as client:
        english = await call(client, "list_shelf", limit=0)
    assert tools == ["list_shelf"]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in refused["message"]), refused  # the suite's zh
    assert english["message"].isascii()
    assert english["message"] != refused["message"]


SELECTION_SUITE = """
import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    return request.param


@pytest.fixture
def hostd_config(backend):
    return {}


def test_plain(connect):
    pass


@pytest.mark.served
def test_marked(connect):
    pass


@pytest.mark.served
def test_marked_without_a_store(connect_in_memory):
    pass
"""


def test_connect_serves_only_the_marked_tests_and_only_on_the_embedded_store(tmp_path: Path) -> None:
    """``connect`` runs every test in-memory; a real ``hostd serve`` only for a test marked
    ``served``, and on the team database not at all (a start costs about a second)."""
    import subprocess
    import sys

    (tmp_path / "test_selection.py").write_text(SELECTION_SUITE, encoding="utf-8")
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ids = sorted(line for line in collected.stdout.splitlines() if "::" in line)
    assert ids == [
        "test_selection.py::test_marked[in-memory-postgres]",
        "test_selection.py::test_marked[in-memory-sqlite]",
        "test_selection.py::test_marked[served-sqlite]",
        "test_selection.py::test_marked_without_a_store[postgres]",
        "test_selection.py::test_marked_without_a_store[sqlite]",
        "test_selection.py::test_plain[in-memory-postgres]",
        "test_selection.py::test_plain[in-memory-sqlite]",
    ], collected.stdout + collected.stderr


def test_a_capture_chromium_had_no_frame_for_is_tried_again_and_other_errors_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    from hostd_testing.browser import _retry_empty_captures

    answers: list[object] = [
        playwright.Error("Protocol error (Page.captureScreenshot): Unable to capture screenshot"),
        b"png",
        playwright.Error("Target page, context or browser has been closed"),
    ]
    calls: list[object] = []

    def capture(self: object, **kwargs: object) -> bytes:
        calls.append(self)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, bytes)
        return answer

    monkeypatch.setattr(playwright.Page, "screenshot", capture)
    monkeypatch.setattr("hostd_testing.browser.time.sleep", lambda seconds: None)
    _retry_empty_captures()
    page = object()
    assert playwright.Page.screenshot(page, path="x.png") == b"png"
    assert calls == [page, page]
    with pytest.raises(playwright.Error, match="has been closed"):
        playwright.Page.screenshot(page)
    assert calls == [page, page, page]
