"""Checks every plugin owes the host's rules, written once and run by each plugin's tests.

- ``check_paging``: a listing tool pages the one way (README, "Writing a plugin"): limit 1-100,
  an opaque cursor bound to the listing and its filters, ``next_cursor``/``truncated`` agreeing,
  every item once across pages in the order of one big page, the same ``total`` on each.
- ``check_team_database``: a plugin with a store on the team database (``storage``) is migrated
  by ``hostd db migrate`` (``--check`` says what is pending, applying twice changes nothing) and
  a database that cannot be reached stops ``hostd serve`` with exit 2, naming the database but
  never its password.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcp import Client

from hostd_testing.calls import Envelope, call, ok
from hostd_testing.clients import write_config


async def check_paging(
    client: Client,
    tool: str,
    items: str,
    *,
    arguments: Mapping[str, Any] | None = None,
    other_filters: Mapping[str, Any] | None = None,
    page_size: int = 2,
    key: Callable[[Any], Any] = repr,
) -> list[Any]:
    """Walk ``tool``'s listing (``items`` names its list field) ``page_size`` at a time and check
    the paging rule; return every item, in order. The listing must hold more than ``page_size``
    and at most 100 items (seed it first). ``other_filters`` are arguments that change the
    listing: a cursor made without them must be refused with them. ``key`` names an item (for
    the each-once check); the default is the whole item."""
    from hostd.paging import encode_cursor

    given = dict(arguments or {})
    whole = await ok(client, tool, **given, limit=100)
    assert whole["next_cursor"] is None, whole
    assert whole["truncated"] is False, whole
    expected = whole[items]
    assert len(expected) > page_size, f"seed {tool} with more than {page_size} items to check its paging"

    walked: list[Any] = []
    cursor: str | None = None
    first_cursor: str | None = None
    while True:
        page = await ok(client, tool, **given, limit=page_size, **({"cursor": cursor} if cursor else {}))
        assert 0 < len(page[items]) <= page_size, page
        if "total" in whole:  # a listing that counts its items says the same count on every page
            assert page["total"] == whole["total"] == len(expected), (page, whole["total"])
        walked += page[items]
        cursor = page["next_cursor"]
        assert page["truncated"] is (cursor is not None), page
        first_cursor = first_cursor or cursor
        if cursor is None:
            break
    assert [key(item) for item in walked] == [key(item) for item in expected], "pages differ from one page"
    assert len({repr(key(item)) for item in walked}) == len(walked), "an item was listed twice"
    assert first_cursor is not None

    refusals: list[tuple[str, dict[str, Any]]] = [
        ("limit=0", await _refused(client, tool, **given, limit=0)),
        ("limit=101", await _refused(client, tool, **given, limit=101)),
        ("junk cursor", await _refused(client, tool, **given, cursor="not-a-cursor")),
        (
            "another listing's cursor",
            await _refused(client, tool, **given, cursor=encode_cursor(f"not_{tool}", {}, [0])),
        ),
    ]
    if other_filters:
        changed = {**given, **other_filters}
        refusals.append(("other filters", await _refused(client, tool, **changed, cursor=first_cursor)))
    arguments_named = {what: error["details"].get("argument") for what, error in refusals}
    assert arguments_named == {
        what: ("limit" if what.startswith("limit") else "cursor") for what, _ in refusals
    }, refusals
    reasons = {what: error["details"].get("reason") for what, error in refusals if "listing" in what}
    reasons |= {what: error["details"].get("reason") for what, error in refusals if "filters" in what}
    assert reasons == {
        what: ("other_listing" if "listing" in what else "other_filters") for what in reasons
    }, refusals
    assert all(error.get("hint") for _, error in refusals), refusals
    # The limit is not a filter: the same cursor resumes the listing at another page size.
    resumed = await ok(client, tool, **given, limit=100, cursor=first_cursor)
    assert [key(item) for item in resumed[items]] == [key(item) for item in expected[page_size:]]
    return walked


async def _refused(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "error", (
        arguments,
        envelope,
    )
    assert envelope["error"]["code"] == "INVALID_ARGUMENT", (
        arguments,
        envelope,
    )
    error: dict[str, Any] = envelope["error"]
    return error


def run_hostd(
    folder: Path,
    plugins: list[str],
    *args: str,
    url: str | None,
    language: str = "en",
    storage: Mapping[str, Any] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``hostd ARGS --config ...`` in a child process, its store on the team database at ``url``
    (through ``storage.url_env``; ``storage`` adds settings such as ``connect_timeout_seconds``)."""
    config = write_config(
        folder,
        plugins,
        config={
            "language": language,
            "storage": {"url_env": "TEAM_DB", "connect_timeout_seconds": 2, **(storage or {})},
        },
    )
    env = {**os.environ, "HOSTD_CACHE_DIR": "off"}
    if url is not None:
        env["TEAM_DB"] = url
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def check_team_database(folder: Path, plugin: str, *, postgres_url: str, version: int) -> None:
    """``plugin``'s team tables through ``hostd db migrate`` on a fresh database (``version`` is
    its latest schema version), then ``hostd serve`` against a database that is down. Leaves
    the database at ``postgres_url`` migrated."""
    pending = run_hostd(folder, [plugin], "db", "migrate", "--check", url=postgres_url)
    assert pending.returncode == 1, pending.stdout + pending.stderr
    assert f"{plugin}: version 0 of {version}" in pending.stdout, pending.stdout
    applied = run_hostd(folder, [plugin], "db", "migrate", url=postgres_url)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"{plugin}: version {version}: current" in applied.stdout, applied.stdout
    again = run_hostd(folder, [plugin], "db", "migrate", "--check", url=postgres_url)
    assert again.returncode == 0, again.stdout
    assert f"{plugin}: version {version}: current" in again.stdout, again.stdout

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    password = secrets.token_hex(8)
    down = run_hostd(folder, [plugin], "serve", url=f"postgresql://hostd:{password}@127.0.0.1:{port}/team")
    assert down.returncode == 2, down.stdout + down.stderr
    assert f"{plugin}: " in down.stderr, down.stderr
    assert f"127.0.0.1:{port}/team" in down.stderr, down.stderr
    assert password not in down.stderr + down.stdout, down.stderr
    assert "Traceback" not in down.stderr, down.stderr


__all__ = ["Envelope", "check_paging", "check_team_database", "run_hostd"]
