"""The audit trail (``audit`` in the config): one record per attempt (a tool call, allowed or
refused, or a request refused at the door), who called what from which surface (``mcp``, ``ui``,
``cli``), the outcome, how long it took, on which replica, and a keyed digest of the arguments
(HMAC-SHA256 under the deployment's audit key: equal arguments give equal digests within one
deployment, and a reader of the trail cannot confirm a guess of what was sent without the key).
Never the arguments themselves, never a token.

The key: the secret in ``$audit.digest_key_env`` (at least 32 bytes, the same on every replica),
else a random key made once in ``data_dir/audit.key`` (readable by its owner only).

Recording must not slow calls: the call observer only appends the finished call to a queue,
and a writer thread digests and writes batches (at least every half second, or sooner when a
batch fills). Where records go:

- without ``storage``: ``data_dir/audit/audit.jsonl``, JSON Lines, rotated past
  ``max_file_bytes`` into ``audit.jsonl.1`` ... ``.N`` (``backups``); several processes may
  append (a cross-process lock around each batch and rotation);
- with ``storage``: the table ``hostd_audit.calls`` in the team database, written by every replica.

Retention: records older than ``retention_days`` are deleted (database) or their rotated files
removed (local file), at start and hourly. The database code is kept to this module's
``DatabaseTrail`` so it can move with the database layer.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hostd.core.observe import CallRecord
from hostd.team.ops_databases import OpsHost

if TYPE_CHECKING:
    from hostd.core.observe import CallObservers
    from hostd.core.ops_settings import AuditConfig

logger = logging.getLogger("hostd.audit")

FLUSH_SECONDS = 0.5
BATCH = 256
PRUNE_SECONDS = 3600.0
FILE_NAME = "audit.jsonl"
FIELDS = ("time", "member", "surface", "tool", "outcome", "duration_ms", "replica", "arguments_hmac")
KEY_FILE = "audit.key"
MIN_KEY_BYTES = 32


def replica_name() -> str:
    """Which process wrote a record: ``$HOSTD_REPLICA``, else ``host:pid``."""
    return os.environ.get("HOSTD_REPLICA") or f"{socket.gethostname()}:{os.getpid()}"


def arguments_digest(arguments: Any, key: bytes) -> str:
    """HMAC-SHA256 of the arguments as canonical JSON (sorted keys) under ``key``: equal
    arguments, equal digest, and no way to test a guess without the key."""
    canonical = json.dumps(
        arguments or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def audit_key(config: AuditConfig, data_dir: Path) -> bytes:
    """The deployment's audit key: ``$digest_key_env``, else the data folder's key file (made once)."""
    from hostd.core.errors import HostError

    if config.digest_key_env:
        secret = os.environ.get(config.digest_key_env, "").encode()
        if len(secret) < MIN_KEY_BYTES:
            raise HostError(
                f"audit.digest_key_env names ${config.digest_key_env}, which must hold a secret of at least "
                f"{MIN_KEY_BYTES} bytes, the same on every replica "
                '(make one with: python -c "import secrets; print(secrets.token_hex(32))")'
            )
        return secret
    path = data_dir / KEY_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32).encode()
    try:  # made at most once: a second process that lost the race reads the first one's key
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(descriptor, "wb") as file:
        file.write(key)
    return key


def entry_of(record: CallRecord, replica: str, key: bytes) -> dict[str, Any]:
    return {
        "time": datetime.datetime.fromtimestamp(record.started_at, datetime.UTC).isoformat(
            timespec="milliseconds"
        ),
        "member": record.member,
        "surface": record.surface,
        "tool": record.tool,
        "outcome": record.outcome,
        "duration_ms": round(record.duration * 1000, 3),
        "replica": replica,
        "arguments_hmac": arguments_digest(record.arguments, key),
    }


@dataclass(frozen=True)
class AuditQuery:
    member: str | None = None
    tool: str | None = None
    since: datetime.datetime | None = None
    limit: int = 1000


class TrailStore(Protocol):
    def append(self, entries: list[dict[str, Any]]) -> None: ...
    def read(self, query: AuditQuery) -> list[dict[str, Any]]: ...
    def prune(self, before: datetime.datetime) -> int: ...
    def close(self) -> None: ...


def _matches(entry: dict[str, Any], query: AuditQuery) -> bool:
    if query.member is not None and entry.get("member") != query.member:
        return False
    if query.tool is not None and entry.get("tool") != query.tool:
        return False
    if query.since is not None:
        try:
            at = datetime.datetime.fromisoformat(str(entry.get("time")))
        except ValueError:
            return False
        if at < query.since:
            return False
    return True


class FileTrail:
    """``data_dir/audit/audit.jsonl`` and its rotated predecessors."""

    def __init__(self, folder: Path, max_bytes: int, backups: int) -> None:
        self.folder = folder
        self.path = folder / FILE_NAME
        self.max_bytes = max_bytes
        self.backups = backups

    def _lock(self) -> Any:
        from hostd_fs.locking import path_lock

        return path_lock(self.path, lock_dir=self.folder)

    def _rotated(self, number: int) -> Path:
        return self.folder / f"{FILE_NAME}.{number}"

    def append(self, entries: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries).encode()
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock():
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size and size + len(data) > self.max_bytes:
                self._rotate()
            with self.path.open("ab") as file:
                file.write(data)

    def _rotate(self) -> None:
        self._rotated(self.backups).unlink(missing_ok=True)
        for number in range(self.backups - 1, 0, -1):
            if self._rotated(number).exists():
                self._rotated(number).replace(self._rotated(number + 1))
        self.path.replace(self._rotated(1))

    def files(self) -> list[Path]:
        """Oldest first."""
        rotated = [self._rotated(n) for n in range(self.backups, 0, -1) if self._rotated(n).exists()]
        return [*rotated, *([self.path] if self.path.exists() else [])]

    def read(self, query: AuditQuery) -> list[dict[str, Any]]:
        found: deque[dict[str, Any]] = deque(maxlen=query.limit)  # the newest ``limit``
        for path in self.files():
            with path.open(encoding="utf-8", errors="replace") as file:
                for line in file:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a crash mid-write
                    if isinstance(entry, dict) and _matches(entry, query):
                        found.append(entry)
        return list(found)

    def prune(self, before: datetime.datetime) -> int:
        """Remove rotated files whose last record is older than ``before`` (the current file stays)."""
        removed = 0
        with self._lock():
            for number in range(1, self.backups + 1):
                path = self._rotated(number)
                if (
                    path.exists()
                    and datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC) < before
                ):
                    path.unlink()
                    removed += 1
        return removed

    def close(self) -> None:
        pass


class DatabaseTrail:
    """The ``hostd_audit.calls`` table in the team database."""

    def __init__(self, database: Any) -> None:
        self.database = database

    def append(self, entries: list[dict[str, Any]]) -> None:
        rows = [tuple(entry[name] for name in FIELDS) for entry in entries]

        def insert(connection: Any) -> None:
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO calls (at, member, surface, tool, outcome, duration_ms, replica, "
                    "arguments_hmac) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    rows,
                )

        self.database.run(insert)

    def read(self, query: AuditQuery) -> list[dict[str, Any]]:
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("member", query.member), ("tool", query.tool)):
            if value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        if query.since is not None:
            where.append("at >= %s")
            params.append(query.since)
        sql = (
            "SELECT at, member, surface, tool, outcome, duration_ms, replica, arguments_hmac FROM calls"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY at DESC, id DESC LIMIT %s"
        )
        rows = self.database.run(lambda c: c.execute(sql, (*params, query.limit)).fetchall(), write=False)
        entries = []
        for row in reversed(rows):
            entry = dict(row)
            entry["time"] = entry.pop("at").astimezone(datetime.UTC).isoformat(timespec="milliseconds")
            entries.append({name: entry[name] for name in FIELDS})
        return entries

    def prune(self, before: datetime.datetime) -> int:
        return int(
            self.database.run(lambda c: c.execute("DELETE FROM calls WHERE at < %s", (before,)).rowcount)
        )

    def close(self) -> None:
        self.database.close()


def open_trail(host: OpsHost, config: AuditConfig) -> TrailStore:
    """The file or the table, as the config says."""
    storage = host.loaded.config.storage
    if storage is None:
        return FileTrail(host.loaded.data_dir / "audit", config.max_file_bytes, config.backups)
    from hostd.team.ops_databases import AUDIT, ops_database

    database = ops_database(host, AUDIT)
    return DatabaseTrail(database)


class AuditTrail:
    """The call observer and its writer thread."""

    def __init__(
        self, store: TrailStore, config: AuditConfig, key: bytes, replica: str | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.key = key
        self.replica = replica or replica_name()
        self._queue: deque[CallRecord] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._pruned_at = 0.0
        self._thread = threading.Thread(target=self._write_loop, name="hostd-audit", daemon=True)
        self._thread.start()

    def observe(self, record: CallRecord) -> None:
        """Called for every finished call, on the serving path: a deque append, nothing more."""
        self._queue.append(record)
        if len(self._queue) >= BATCH:
            self._wake.set()

    def _write_loop(self) -> None:
        while True:
            self._wake.wait(FLUSH_SECONDS)
            self._wake.clear()
            stopping = self._stopping
            self.flush()
            if time.monotonic() - self._pruned_at >= PRUNE_SECONDS or not self._pruned_at:
                self._pruned_at = time.monotonic()
                self.prune()
            if stopping:
                return

    def flush(self) -> None:
        while self._queue:
            batch: list[dict[str, Any]] = []
            while self._queue and len(batch) < BATCH * 4:
                batch.append(entry_of(self._queue.popleft(), self.replica, self.key))
            try:
                self.store.append(batch)
            except Exception:
                logger.exception("audit: %d record(s) could not be written", len(batch))

    def prune(self) -> None:
        before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=self.config.retention_days)
        try:
            removed = self.store.prune(before)
        except Exception:
            logger.exception("audit: pruning failed")
            return
        if removed:
            logger.info("audit: pruned %d (older than %s)", removed, before.isoformat(timespec="seconds"))

    def close(self) -> None:
        """Write what is queued, then stop (at shut-down)."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=10)
        self.flush()
        self.store.close()


class AuditedHost(OpsHost, Protocol):
    """What installing the trail needs of the host: its config, databases and call observers."""

    @property
    def observers(self) -> CallObservers: ...


def install_audit(host: AuditedHost) -> AuditTrail | None:
    """Record this host's calls, when ``audit`` is configured and enabled."""
    config = host.loaded.config.audit
    if config is None or not config.enabled:
        return None
    trail = AuditTrail(open_trail(host, config), config, audit_key(config, host.loaded.data_dir))
    host.observers.add(trail.observe)
    return trail


def read_trail(host: OpsHost, query: AuditQuery) -> Iterator[dict[str, Any]]:
    config = host.loaded.config.audit
    if config is None:
        from hostd.core.ops_settings import AuditConfig

        config = AuditConfig()
    store = open_trail(host, config)
    try:
        yield from store.read(query)
    finally:
        store.close()
