"""The session store contract, run unchanged against both backends: the files and PostgreSQL.

The tool tests (every ``client`` test) already run on both; these pin the stores down
operation by operation, including search and appends from two processes at once.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_deep_thinking.store import (
    BACKUPS_KEPT,
    BackupNotFound,
    SessionExists,
    SessionListing,
    SessionNotFound,
    SessionState,
    SessionStore,
    new_document,
)


def _plan(
    number: int, text: str = "t", **extra: Any
) -> Callable[[SessionState], tuple[dict[str, Any], None]]:
    def plan(state: SessionState) -> tuple[dict[str, Any], None]:
        return (
            {
                "thought_number": number,
                "content": text,
                "type": "regular",
                "is_revision": False,
                "total_thoughts": max(number, state.meta.get("total_thoughts") or 0),
                "next_thought_needed": True,
                "timestamp": f"2026-01-01T00:00:{number % 60:02d}Z",
                **extra,
            },
            None,
        )

    return plan


def add(store: Any, session_id: str, number: int, text: str = "t", **extra: Any) -> int:
    appended = store.append(
        session_id, _plan(number, text, **extra), create=lambda: new_document(session_id, name=session_id)
    )
    return int(appended.thought["seq"])


def postgres_store(url: str) -> Any:
    from hostd_db import TeamDatabaseSettings, open_database
    from hostd_deep_thinking.store.postgres import PostgresSessionStore
    from hostd_deep_thinking.store.schema import schema

    settings = TeamDatabaseSettings(url, pool_size=2)
    return PostgresSessionStore(open_database(schema(), "deep-thinking", data_dir=Path("."), team=settings))


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "files":
        opened: Any = SessionStore(tmp_path / "data", compact_every=5)
    else:
        opened = postgres_store(request.getfixturevalue("postgres_url"))
    try:
        yield opened
    finally:
        opened.close()


def test_create_then_load_gives_the_same_document(store: Any) -> None:
    document = new_document("a", name="A", description="d", metadata={"k": ["v", 1]}, total_thoughts=3)
    store.create(document)
    loaded = store.load("a")
    assert loaded is not None
    assert {k: v for k, v in loaded.to_document().items() if k != "format_version"} == {
        k: v for k, v in document.items() if k != "format_version"
    }
    assert store.load("missing") is None
    assert store.exists("a")
    assert not store.exists("missing")
    with pytest.raises(SessionExists):
        store.create(new_document("a", name="again"))


def test_appends_are_numbered_in_order_and_the_plan_sees_the_session(store: Any) -> None:
    seen: list[int] = []

    def plan(state: SessionState) -> tuple[dict[str, Any], None]:
        seen.append(state.last_seq)
        return _plan(len(seen))(state)

    for _ in range(12):
        store.append("s", plan, create=lambda: new_document("s", name="s"))
    assert seen == list(range(12))
    state = store.load("s")
    assert [t["seq"] for t in state.thoughts] == list(range(1, 13))
    assert state.summary()["thought_count"] == 12
    assert state.meta["total_thoughts"] == 12
    with pytest.raises(SessionNotFound):
        store.append("nope", _plan(1))


def test_a_refusing_plan_leaves_nothing_behind(store: Any) -> None:
    add(store, "s", 1)

    def refuse(state: SessionState) -> tuple[dict[str, Any], None]:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        store.append("s", refuse)
    assert add(store, "s", 2) == 2
    assert [t["seq"] for t in store.load("s").thoughts] == [1, 2]


def test_branches_and_labels_survive_a_reload(store: Any) -> None:
    add(store, "s", 1)
    add(store, "s", 2, branch_id="b", branch_from_thought=1, type="branch")
    add(store, "s", 2)
    state = store.load("s")
    assert list(state.branches) == ["b"]
    assert state.max_regular_label == 2
    assert state.latest_by_label == {1: 1, 2: 3}
    assert state.summary()["branches"] == ["b"]


def test_status_changes_are_kept_and_backed_up(store: Any) -> None:
    add(store, "s", 1)
    before = len(store.backups("s"))

    def archive(state: SessionState) -> str:
        previous: str = state.meta["status"]
        state.meta["status"] = "archived"
        return previous

    state, previous = store.update_meta("s", archive)
    assert previous == "active"
    assert state.meta["status"] == "archived"
    assert store.load("s").meta["status"] == "archived"
    assert len(store.backups("s")) == before + 1
    with pytest.raises(SessionNotFound):
        store.update_meta("nope", archive)


def test_delete_then_restore_brings_back_every_thought(store: Any) -> None:
    for number in range(1, 8):
        add(store, "s", number, f"thought {number}")
    kept = store.load("s").to_document()
    store.delete("s")
    assert store.load("s") is None
    assert not store.exists("s")
    assert str(store.backups("s")[-1]).endswith("-deleted.json")
    add(store, "s", 1, "a new session under the same id")
    with pytest.raises(SessionExists):
        store.restore("s")
    state, name, replaced = store.restore("s", replace=True)
    assert name.endswith("-deleted.json")
    assert replaced
    assert state.to_document()["thoughts"] == kept["thoughts"]
    assert store.load("s").to_document()["thoughts"] == kept["thoughts"]
    with pytest.raises(BackupNotFound):
        store.restore("s", "no-such-backup.json", replace=True)
    with pytest.raises(SessionNotFound):
        store.delete("nope")


def test_only_the_newest_backups_are_kept(store: Any) -> None:
    add(store, "s", 1)
    for _ in range(BACKUPS_KEPT + 3):
        store.update_meta("s", lambda state: None)
    names = [str(name).rsplit("/", 1)[-1] for name in store.backups("s")]
    assert len(names) == BACKUPS_KEPT
    assert names == sorted(names)


def test_listing_is_newest_first_filtered_and_counted(store: Any) -> None:
    for session_id, number in (("old", 1), ("mid", 2), ("new", 3)):
        add(store, session_id, number)
    store.update_meta("mid", lambda state: state.meta.update(status="completed"))
    first = store.list_summaries(SessionListing(limit=2))
    assert first.total == 3
    assert [row["session_id"] for row in first.rows] == ["mid", "new"]
    assert first.more
    last = first.rows[-1]
    rest = store.list_summaries(
        SessionListing(limit=2, after=(str(last["updated_at"]), str(last["session_id"])))
    )
    assert rest.total == 3
    assert [row["session_id"] for row in rest.rows] == ["old"]
    assert not rest.more
    active = store.list_summaries(SessionListing(status="active", limit=10))
    assert active.total == 2
    assert [row["session_id"] for row in active.rows] == ["new", "old"]
    assert not active.more
    assert active.rows[0]["thought_count"] == 1
    assert active.rows[0]["status"] == "active"


def test_the_default_session_is_remembered_per_member(store: Any) -> None:
    assert store.default_session("alice") is None
    store.set_default_session("alice", "a")
    store.set_default_session("alice", "b")
    assert store.default_session("alice") == "b"
    assert store.default_session("bob") is None  # alice's pointer is hers alone
    store.set_default_session("bob", "c")
    assert (store.default_session("alice"), store.default_session("bob")) == ("b", "c")


def _write_shared_default(store: Any, session_id: str) -> None:
    """The one default-session pointer a store kept before members were recorded."""
    if isinstance(store, SessionStore):
        store.default_path.write_text(json.dumps({"session_id": session_id, "since": "2026-01-01"}))
    else:
        store.database.write(
            lambda conn: conn.execute(
                "INSERT INTO default_session (session_id, since) VALUES (?, '2026-01-01')", (session_id,)
            )
        )


def test_the_default_of_before_members_is_kept_by_members_without_their_own(store: Any) -> None:
    """An upgraded store goes on with the session the default pointed at, until a member starts anew."""
    _write_shared_default(store, "old")
    assert store.default_session("alice") == "old"
    assert store.default_session("bob") == "old"
    store.set_default_session("alice", "new")
    assert store.default_session("alice") == "new"
    assert store.default_session("bob") == "old"


def _writer(url: str, barrier: Any, who: str, count: int) -> None:
    store = postgres_store(url)
    barrier.wait()
    for number in range(1, count + 1):
        add(store, "shared", number, f"{who} {number}")
    store.close()


@pytest.mark.slow
def test_two_processes_append_400_thoughts_without_gaps(postgres_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    writers = [context.Process(target=_writer, args=(postgres_url, barrier, who, 200)) for who in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    store = postgres_store(postgres_url)
    try:
        thoughts = store.load("shared").thoughts
        assert [t["seq"] for t in thoughts] == list(range(1, 401))
        for who in ("a", "b"):
            mine = [t["content"] for t in thoughts if t["content"].startswith(who + " ")]
            assert mine == [f"{who} {number}" for number in range(1, 201)]
    finally:
        store.close()


@pytest.fixture
def search(store: Any, tmp_path: Path) -> Iterator[Any]:
    """``search(text, session_id=None, limit=20)`` -> (hits, truncated, strict) on the store's backend:
    the SQLite FTS5 index beside the files, or the store's own tsvector search on PostgreSQL."""
    from hostd_deep_thinking.search import plan_query
    from hostd_deep_thinking.store.search_index import SearchIndex

    index = SearchIndex(store, tmp_path / "search.db") if isinstance(store, SessionStore) else store

    def run(text: str, session_id: str | None = None, limit: int = 20) -> Any:
        plan = plan_query(text)
        assert plan is not None
        return index.search(plan, session_id, limit)

    yield run
    if index is not store:
        index.close()


def _found(result: Any) -> list[tuple[str, int]]:
    return sorted((hit.session_id, hit.sequence) for hit in result[0])


def test_search_finds_words_by_prefix_and_folds_case_and_accents(store: Any, search: Any) -> None:
    add(store, "en", 1, "Planning the Café opening")
    add(store, "en", 2, "Budget for the opening party")
    assert _found(search("plan")) == [("en", 1)]
    assert _found(search("cafe")) == [("en", 1)]
    assert _found(search("OPENING")) == [("en", 1), ("en", 2)]
    assert _found(search("op")) == []  # two letters are a whole word, not a prefix
    hit = search("budget")[0][0]
    assert (hit.session_name, hit.thought_number, hit.kind, hit.content) == (
        "en",
        2,
        "regular",
        "Budget for the opening party",
    )


def test_search_finds_chinese_of_one_two_and_more_characters(store: Any, search: Any) -> None:
    add(store, "zh", 1, "我们需要重新思考这个方案")
    add(store, "zh", 2, "预算不够，思路要改")
    add(store, "zh", 3, "考试安排")
    assert _found(search("思")) == [("zh", 1), ("zh", 2)]
    assert _found(search("思考")) == [("zh", 1)]
    assert _found(search("重新思考")) == [("zh", 1)]
    assert _found(search("案")) == [("zh", 1)]  # a run's last character
    assert _found(search("考试")) == [("zh", 3)]
    assert _found(search("思维")) == []


def test_search_requires_every_term_then_falls_back_to_any(store: Any, search: Any) -> None:
    add(store, "s", 1, "apples and pears")
    add(store, "s", 2, "apples only")
    hits, truncated, strict = search("apples pears")
    assert [(hit.sequence, strict, truncated) for hit in hits] == [(1, True, False)]
    hits, _, strict = search("pears bananas")
    assert [hit.sequence for hit in hits] == [1]
    assert not strict


def test_search_ranks_scopes_labels_limits_and_forgets_deleted_sessions(store: Any, search: Any) -> None:
    add(store, "a", 1, "a long note that mentions the river once among many other words here")
    add(store, "a", 2, "river river river")
    add(store, "b", 1, "river crossing", stage="analysis", tags=["渡河"])
    hits, truncated, _ = search("river", limit=2)
    assert truncated
    assert (hits[0].session_id, hits[0].sequence) == ("a", 2)
    assert _found(search("river", session_id="b")) == [("b", 1)]
    assert _found(search("analysis")) == [("b", 1)]
    assert _found(search("渡河")) == [("b", 1)]
    store.delete("b")
    assert _found(search("river")) == [("a", 1), ("a", 2)]


def test_a_large_import_is_written_in_pieces_and_read_again_when_next_used(tmp_path: Path) -> None:
    """A session stored whole above CACHED_INSTALL_BYTES is not kept resident beside the next large
    request; its document is the same JSON as before, its backup a copy of it, and the next
    thought reads it back."""
    from hostd_deep_thinking.store.files import CACHED_INSTALL_BYTES

    store = SessionStore(tmp_path / "data")
    try:
        document = new_document("big", name="大")
        content = "分析" * 4_000
        document["thoughts"] = [
            {**_plan(n, content)(SessionState.from_document(new_document("x", name="x")))[0], "seq": n}
            for n in range(1, 201)
        ]
        document["last_seq"] = 200
        state = store.create(document)
        written = store.document_path("big").read_bytes()
        assert len(written) > CACHED_INSTALL_BYTES
        assert json.loads(written) == json.loads(json.dumps(state.to_document(), ensure_ascii=False))
        assert written == json.dumps(state.to_document(), ensure_ascii=False).encode()
        backups = sorted((tmp_path / "data" / "backups" / "big").iterdir())
        assert [path.read_bytes() for path in backups] == [written]
        assert "big" not in store._cache
        appended = store.append("big", _plan(201))
        assert appended.thought_count == 201
        small = store.create(new_document("small", name="small"))
        assert small.session_id in store._cache  # a new, small session stays cached
    finally:
        store.close()
