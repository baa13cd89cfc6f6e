"""Records: what a plugin's store hands ``hostd db copy`` and takes back, and the copy written once.

A store that can be copied from a user's data folder into the team database is a
``RecordStore``. The local one streams its ``export_records()``: plain JSON-able records, grouped
by kind in the order the kinds are declared, each kind in a stable order, read page by page
(``pages``) so a store of 100,000 records never sits in memory at once. The team one answers
``find_record`` (the same record as it holds it, or None) and ``import_record``; the merge rule
is declared per kind (``RecordKind``): a record absent there is inserted, an equal one is
unchanged, one whose history (``parts`` with ``history=True``) continues the team's is a
fast-forward reported as updated, one the team's continues is unchanged, anything else is a
conflict, reported and never overwritten. A record to be written that ``needs`` a record in
conflict is held back as a conflict too (it would refer to someone else's record).

``import_records`` is the loop: one write transaction of the team database (all of it is
copied, or none; the transaction is re-run whole when the database asks), the counts per kind,
the conflicts in words a person can act on, and progress. Running it twice changes nothing.

A store whose keys are numbers it hands out itself (task ids: every store has its own ``t-1``)
also has ``as_team_record`` (``RenumberingStore``): each local record is asked for under the key
and references it has, or gets, in the team store. A local record whose key the team holds for
another record is then copied under a new key, reported as renumbered, and found under that key
by the next copy, which changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from hostd_errors import Text
from pydantic import ValidationError

from hostd.core.arguments import reason
from hostd.core.jsonvalue import JSONValue

if TYPE_CHECKING:
    from hostd_db import Connection, Database

__all__ = [
    "CopyReport",
    "Merge",
    "Record",
    "RecordKind",
    "RecordStore",
    "RenumberingStore",
    "import_records",
    "merge",
    "pages",
]

#: A record's data: a JSON object (each store parses it into its own shape when it writes it).
RecordData = Mapping[str, JSONValue]

T = TypeVar("T")
K = TypeVar("K")

#: How often (in records read) ``import_records`` reports its progress.
PROGRESS_EVERY = 1000


@dataclass
class CopyReport:
    """What ``hostd db copy`` did for one plugin: records copied, found identical, or in conflict.

    A conflict (the team database holds a different record under the same key) is listed in
    words a person can act on and is never overwritten.
    """

    copied: dict[str, int] = field(default_factory=dict)  # kind of record -> how many were new
    unchanged: dict[str, int] = field(default_factory=dict)  # kind of record -> already identical
    conflicts: list[str] = field(default_factory=list)
    #: kind of record -> how many the team database held at an earlier point of the same history
    #: (a fast-forward: the newer local versions were added, nothing of the team's was lost)
    updated: dict[str, int] = field(default_factory=dict)
    #: local records copied under another key (theirs was taken in the team database), in words:
    #: "task t-1 is task t-7 in the team database"
    renumbered: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Record:
    """One record of a store as plain JSON-able values, the same shape on every backend.

    ``key`` names it within its ``kind`` on every database (a URI, a task id: never a row
    number). ``needs`` are the ``(kind, key)`` of records it refers to: when one of them is in
    conflict, this one is held back. ``damaged`` says why a local record could not be read: it
    is reported as a conflict and not copied.
    """

    kind: str
    key: str
    data: RecordData = field(default_factory=dict)
    needs: tuple[tuple[str, str], ...] = ()
    damaged: Text | None = None


@dataclass(frozen=True)
class RecordKind:
    """A kind of record and its merge rule.

    - ``name``: the kind as reported (``memories``), the ``Record.kind`` of its records.
    - ``label``: how a person names one record of the kind from its key (``memory proj://db``).
    - ``parts``: a list field whose items are counted in the report too, as ``parts`` (versions,
      thoughts).
    - ``history``: ``parts`` is an append-only history, oldest first: a record whose history
      continues the other side's (and agrees on every other field but ``merged``) is a
      fast-forward when it is the local one, already there when it is the team's.
    - ``merged``: fields a fast-forward reconciles (access counts, aliases): compared for
      equality, not for whether one history continues the other.
    - ``ignored``: fields never compared (a link's creation time).
    """

    name: str
    label: Callable[[str], Text]
    parts: str | None = None
    history: bool = False
    merged: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


class Merge(Enum):
    """What the copy does with one local record, given the team's record of the same key."""

    NEW = "new"  # absent there: inserted
    SAME = "same"  # equal: unchanged
    BEHIND = "behind"  # the team's history continues this one's: unchanged
    AHEAD = "ahead"  # this history continues the team's: the newer part is added (updated)
    CONFLICT = "conflict"  # anything else: reported, never overwritten


def merge(kind: RecordKind, mine: RecordData, theirs: RecordData | None) -> Merge:
    """The rule of ``kind`` applied to a local record and the team's one of the same key."""
    if theirs is None:
        return Merge.NEW

    def without(data: RecordData, fields: set[str]) -> dict[str, JSONValue]:
        return {name: value for name, value in data.items() if name not in fields}

    ignored = set(kind.ignored)
    if without(mine, ignored) == without(theirs, ignored):
        return Merge.SAME
    if kind.history and kind.parts is not None:
        rest = {*ignored, *kind.merged, kind.parts}
        if without(mine, rest) == without(theirs, rest):
            local, team = _parts(mine, kind.parts), _parts(theirs, kind.parts)
            if len(local) > len(team) and local[: len(team)] == team:
                return Merge.AHEAD
            if len(team) > len(local) and team[: len(local)] == local:
                return Merge.BEHIND
    return Merge.CONFLICT


def _parts(data: RecordData, name: str) -> list[JSONValue]:
    """The list a kind's ``parts`` names in a record's data (a store that gives anything else is wrong)."""
    parts = data.get(name)
    if not isinstance(parts, list):
        raise TypeError(f"a record's {name!r} must be a list, not {type(parts).__name__}")
    return parts


class RecordStore(Protocol):
    """What ``hostd db copy`` needs of a plugin's store (see the module's doc).

    The local store is asked for ``export_records`` only; the team store for the rest, always
    inside the copy's one write transaction (``conn``).
    """

    @property
    def record_kinds(self) -> Sequence[RecordKind]:
        """The kinds of record, in the order they are exported and imported."""
        ...

    @property
    def import_lock(self) -> str | None:
        """The lock the copy's transaction holds (``Database.write(lock=)``), if the store has one."""
        ...

    def export_records(self) -> Iterator[Record]:
        """Every record, grouped by kind in ``record_kinds`` order, each kind in a stable order."""
        ...

    def find_record(self, conn: Connection, kind: str, key: str) -> RecordData | None:
        """The data of the record of ``kind`` and ``key`` this store holds, None when it holds none;
        something other than None (a record that differs) when the key is taken otherwise."""
        ...

    def begin_import(self, conn: Connection) -> None:
        """Start of the copy's transaction: take the locks a copy needs, reset what ``end_import`` uses."""
        ...

    def import_record(self, conn: Connection, record: Record, theirs: RecordData | None) -> Text | None:
        """Write a new record (``theirs`` None) or fast-forward ``theirs`` to it; a conflict found
        while writing (a name taken by something else) is returned and nothing is written.

        The data is JSON: parse it into the store's own shape (a pydantic ``TypeAdapter``) before
        writing any of it. A ``ValidationError`` raised then is reported as that record's conflict."""
        ...

    def end_import(self, conn: Connection) -> None:
        """End of the copy's transaction: what waited for every record (links, indexes, sequences)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class RenumberingStore(RecordStore, Protocol):
    """A team store whose keys are numbers each store hands out (task ids), so a local key may be
    the team's key of another record."""

    def as_team_record(self, conn: Connection, record: Record) -> Record:
        """``record`` (a local one) as this store holds or will hold it: under the key it has here
        (its own when free here, or held here for the same record; else one handed out now, and the
        same one for it in every later copy) and with each key it refers to translated the same
        way. ``needs`` and ``damaged`` stay as they are."""
        ...


def pages(fetch: Callable[[K | None], Sequence[T]], key: Callable[[T], K]) -> Iterator[T]:
    """Every item ``fetch`` finds, one page at a time: ``fetch(after)`` returns the items after the
    key ``after`` in key order (None: from the first), and an empty page ends it."""
    after: K | None = None
    while True:
        page = fetch(after)
        if not page:
            return
        yield from page
        after = key(page[-1])


def _differs(label: Text) -> Text:
    return Text(
        en=f"{label.en} differs in the team database",
        zh=f"{label.zh} 在团队数据库中的内容与本地不同",
    )


def _held_back(label: Text, blocker: Text) -> Text:
    return Text(
        en=f"{label.en} not copied: it waits on {blocker.en}, which is in conflict",
        zh=f"{label.zh} 未复制：它等待的{blocker.zh}存在冲突",
    )


def _renumbered(label: Text, team_label: Text) -> Text:
    return Text(
        en=f"{label.en} is {team_label.en} in the team database (its id was taken there)",
        zh=f"{label.zh} 在团队数据库中为{team_label.zh}（原编号已被占用）",
    )


def _not_its_shape(label: Text, error: ValidationError) -> Text:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "data"
    return Text(
        en=f"{label.en} not copied: its data is not as the store keeps it ({where}: {reason(first, 'en')})",
        zh=f"{label.zh} 未复制：其数据不是存储所保存的形式（{where}：{reason(first, 'zh')}）",
    )


def _count(
    report: CopyReport, kind: RecordKind, outcome: Merge, mine: RecordData, theirs: RecordData | None
) -> None:
    """Count one record (and its parts) as copied, updated or unchanged."""

    def count(bucket: dict[str, int], name: str | None, how_many: int = 1) -> None:
        if name is not None:
            bucket[name] = bucket.get(name, 0) + how_many

    mine_parts = len(_parts(mine, kind.parts)) if kind.parts else 0
    if outcome is Merge.NEW:
        count(report.copied, kind.name)
        count(report.copied, kind.parts, mine_parts)
    elif outcome is Merge.AHEAD:
        assert theirs is not None
        assert kind.parts is not None
        team_parts = len(_parts(theirs, kind.parts))
        count(report.updated, kind.name)
        count(report.copied, kind.parts, mine_parts - team_parts)
        count(report.unchanged, kind.parts, team_parts)
    else:  # the same, or the team's is ahead
        count(report.unchanged, kind.name)
        count(report.unchanged, kind.parts, mine_parts)


def import_records(
    source: RecordStore,
    target: RecordStore,
    database: Database,
    render: Callable[[Text], str],
    *,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every record of ``source`` into ``target`` (on ``database``) in one write transaction."""
    kinds = {kind.name: kind for kind in target.record_kinds}
    renumbering = target if isinstance(target, RenumberingStore) else None

    def work(conn: Connection) -> CopyReport:
        report = CopyReport()  # built inside: the database may run the transaction again
        in_conflict: set[tuple[str, str]] = set()
        target.begin_import(conn)
        read = 0
        for record in source.export_records():
            read += 1
            if progress is not None and read % PROGRESS_EVERY == 0:
                progress(read)
            kind = kinds[record.kind]
            label = kind.label(record.key)
            if record.damaged is not None:
                in_conflict.add((record.kind, record.key))
                report.conflicts.append(render(record.damaged))
                continue
            local = record
            if renumbering is not None:
                record = renumbering.as_team_record(conn, record)
            theirs = target.find_record(conn, record.kind, record.key)
            outcome = merge(kind, record.data, theirs)
            if outcome in (Merge.NEW, Merge.AHEAD):
                blocker = next((need for need in record.needs if need in in_conflict), None)
                if blocker is not None:  # it would refer to someone else's record: held back
                    in_conflict.add((local.kind, local.key))
                    report.conflicts.append(render(_held_back(label, kinds[blocker[0]].label(blocker[1]))))
                    continue
                try:
                    problem = target.import_record(conn, record, theirs if outcome is Merge.AHEAD else None)
                except ValidationError as exc:  # the store parsed the data before writing any of it
                    problem = _not_its_shape(label, exc)
                if problem is not None:
                    in_conflict.add((local.kind, local.key))
                    report.conflicts.append(render(problem))
                    continue
                if outcome is Merge.NEW and record.key != local.key:
                    report.renumbered.append(render(_renumbered(label, kind.label(record.key))))
            if outcome is not Merge.CONFLICT:
                _count(report, kind, outcome, record.data, theirs)
            else:
                in_conflict.add((local.kind, local.key))
                if record.key != local.key:  # copied before under another key: name both
                    there = kind.label(record.key)
                    label = Text(
                        en=f"{label.en} ({there.en} there)", zh=f"{label.zh}（团队数据库中为{there.zh}）"
                    )
                report.conflicts.append(render(_differs(label)))
        target.end_import(conn)
        if report.copied or report.unchanged or report.updated:
            # Every kind is named once something was read, so a line always says the same kinds.
            for kind in target.record_kinds:
                for name in (kind.name, kind.parts):
                    if name is not None:
                        report.copied.setdefault(name, 0)
        return report

    return database.write(work, lock=target.import_lock)
