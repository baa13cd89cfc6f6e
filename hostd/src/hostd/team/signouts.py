"""Dashboard sign-outs: when each member last signed out, kept where every replica sees it.

A dashboard cookie is signed, not stored (``hostd.web.signing``): deleting it in the browser does
not end a copy of it, which would work until it expires. Signing out records the time instead,
per member, and a cookie issued at or before it is no session anymore, on every replica:

- with ``storage``: the table ``hostd_dashboard.signouts`` of the team database (one row a
  member, migrated like the audit and quota tables: ``hostd.team.ops_databases``);
- without: ``data_dir/dashboard/signed_out.json`` (replicas sharing the data folder see it);
- ``hostd web`` (one process, a key of its own): in the process.

Every page asks, so a replica keeps what it read for ``CACHE_SECONDS`` (a file: until the file
changes); its own sign-outs it knows at once. The read is a short blocking statement on the
event loop at most once a second per member. Times are milliseconds since the epoch by the clock
of the replica that signs the cookie or records the sign-out: replicas keep their clocks in step
(NTP), or a new sign-in on a replica running behind is refused until its clock passes the mark.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hostd.team.ops_databases import OpsHost

logger = logging.getLogger("hostd.web")

#: How long a replica trusts a sign-out time it read from the team database.
CACHE_SECONDS = 1.0
FILE_NAME = "signed_out.json"


def now_ms() -> int:
    return int(time.time() * 1000)


class SignOuts(Protocol):
    def signed_out_at(self, member: str) -> int | None:
        """When ``member`` last signed out (ms), or ``None``."""
        ...

    def sign_out(self, member: str) -> int:
        """Record that ``member`` signs out now; returns the time recorded (ms)."""
        ...


class MemorySignOuts:
    """Sign-outs of this process only (``hostd web``: its cookies die with it anyway)."""

    def __init__(self) -> None:
        self._times: dict[str, int] = {}
        self._lock = threading.Lock()

    def signed_out_at(self, member: str) -> int | None:
        with self._lock:
            return self._times.get(member)

    def sign_out(self, member: str) -> int:
        at = now_ms()
        with self._lock:
            self._times[member] = max(at, self._times.get(member, 0))
            return self._times[member]


class FileSignOuts:
    """``{member: ms}`` in one JSON file of the data folder, written atomically under a lock."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / FILE_NAME
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._times: dict[str, int] = {}

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _read(self) -> dict[str, int]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Unreadable: no session is safer than a session someone ended.
            raise RuntimeError(f"{self.path}: cannot read the dashboard's sign-outs: {exc}") from None
        return {str(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def signed_out_at(self, member: str) -> int | None:
        stamp = self._file_stamp()
        with self._lock:
            if stamp != self._stamp:
                self._times = self._read() if stamp is not None else {}
                self._stamp = stamp
            return self._times.get(member)

    def sign_out(self, member: str) -> int:
        from hostd_fs import atomic_write, path_lock

        self.folder.mkdir(parents=True, exist_ok=True)
        at = now_ms()
        with path_lock(self.path, lock_dir=self.folder), self._lock:
            times = self._read()
            times[member] = max(at, times.get(member, 0))
            atomic_write(self.path, json.dumps(times, sort_keys=True))
            self._times, self._stamp = times, self._file_stamp()
            return times[member]


class DatabaseSignOuts:
    """Sign-outs in the team database, shared by the replicas; the database opened on first use."""

    def __init__(self, open_database: Callable[[], Any], clock: Callable[[], float] = time.monotonic) -> None:
        self._open = open_database
        self._database: Any = None
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int | None, float]] = {}

    def _db(self) -> Any:
        with self._lock:
            if self._database is None:
                self._database = self._open()
            return self._database

    def close(self) -> None:
        with self._lock:
            database, self._database = self._database, None
        if database is not None:
            database.close()

    def signed_out_at(self, member: str) -> int | None:
        now = self._clock()
        with self._lock:
            cached = self._cache.get(member)
        if cached is not None and now - cached[1] < CACHE_SECONDS:
            return cached[0]

        def read(connection: Any) -> int | None:
            row = connection.execute("SELECT at_ms FROM signouts WHERE member = %s", (member,)).fetchone()
            return None if row is None else int(row["at_ms"])

        at: int | None = self._db().run(read, write=False)
        with self._lock:
            self._cache[member] = (at, now)
        return at

    def sign_out(self, member: str) -> int:
        at = now_ms()

        def write(connection: Any) -> int:
            row = connection.execute(
                """
                INSERT INTO signouts AS s (member, at_ms) VALUES (%(member)s, %(at)s)
                ON CONFLICT (member) DO UPDATE SET at_ms = GREATEST(s.at_ms, EXCLUDED.at_ms)
                RETURNING at_ms
                """,
                {"member": member, "at": at},
            ).fetchone()
            return int(row["at_ms"])

        recorded: int = self._db().run(write)
        with self._lock:
            self._cache[member] = (recorded, self._clock())
        return recorded


def sign_outs_for(host: OpsHost) -> SignOuts:
    """The team's sign-outs: in the team database with ``storage``, else in the data folder."""
    if host.loaded.config.storage is not None:
        from hostd.team.ops_databases import DASHBOARD, ops_database

        found = DatabaseSignOuts(lambda: ops_database(host, DASHBOARD))
        closers = getattr(host, "closers", None)
        if closers is not None:
            closers.append(found.close)
        return found
    return FileSignOuts(host.loaded.data_dir / "dashboard")
