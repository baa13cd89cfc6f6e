"""The host's own tables in the team database: the audit trail, the shared quota buckets and the
dashboard's sign-outs.

They live beside the plugins' schemas (``hostd_audit``, ``hostd_quotas``, ``hostd_dashboard``:
prefixed so no plugin name can collide) and are listed with them by ``Host.team_databases``, so start-up,
``hostd db migrate`` and ``hostd config check`` migrate and check them like the plugins' tables.
Each is opened once per host. Kept in this one module so it can follow the database layer when
its interface changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hostd.core.config import LoadedConfig

AUDIT = "hostd_audit"
QUOTAS = "hostd_quotas"
DASHBOARD = "hostd_dashboard"

#: The audit table (hostd.team.audit); migrations applied like the plugins'
#: (``hostd db migrate`` or at start). The second records the surface of each attempt and says
#: what the digest is now (keyed).
AUDIT_MIGRATIONS = [
    """
    CREATE TABLE calls (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        member text NOT NULL,
        tool text NOT NULL,
        outcome text NOT NULL,
        duration_ms double precision NOT NULL,
        replica text NOT NULL,
        arguments_sha256 text NOT NULL
    );
    CREATE INDEX calls_at ON calls (at);
    CREATE INDEX calls_member_at ON calls (member, at);
    """,
    """
    ALTER TABLE calls ADD COLUMN surface text NOT NULL DEFAULT 'mcp';
    ALTER TABLE calls RENAME COLUMN arguments_sha256 TO arguments_hmac;
    """,
]

#: The quota buckets table (hostd.team.quotas).
QUOTA_MIGRATIONS = [
    """
    CREATE TABLE buckets (
        key text PRIMARY KEY,
        tokens double precision NOT NULL,
        at timestamptz NOT NULL
    );
    """
]

#: When each member last signed out of the dashboard (hostd.team.signouts): a cookie issued before
#: is refused by every replica.
DASHBOARD_MIGRATIONS = [
    """
    CREATE TABLE signouts (
        member text PRIMARY KEY,
        at_ms bigint NOT NULL
    );
    """
]

_MIGRATIONS = {AUDIT: AUDIT_MIGRATIONS, QUOTAS: QUOTA_MIGRATIONS, DASHBOARD: DASHBOARD_MIGRATIONS}


class OpsHost(Protocol):
    """What this module needs of the host (``hostd.core.host.Host``): its loaded config and the
    components it has opened."""

    @property
    def loaded(self) -> LoadedConfig: ...

    @property
    def ops_databases(self) -> dict[str, Any]: ...


def _wanted(host: OpsHost) -> list[str]:
    """The components the config turns on."""
    config = host.loaded.config
    wanted = []
    if config.audit is not None and config.audit.enabled:
        wanted.append(AUDIT)
    limits = config.limits
    if limits is not None and (limits.per_member is not None or limits.tools):
        wanted.append(QUOTAS)
    if host.loaded.profile.transport.dashboard:
        wanted.append(DASHBOARD)
    return wanted


def ops_database(host: OpsHost, component: str) -> Any:
    """The ``hostd_db.PostgresDatabase`` of one of the host's components (opened once per host)."""
    opened: dict[str, Any] = host.ops_databases
    if component not in opened:
        storage = host.loaded.config.storage
        assert storage is not None, "only with storage"
        from hostd_db import PostgresDatabase

        opened[component] = PostgresDatabase(
            host.loaded.database_url or "",
            component,
            list(_MIGRATIONS[component]),
            max_connections=min(storage.pool_size, 4),
            connect_timeout_s=storage.connect_timeout_seconds,
            statement_timeout_ms=storage.statement_timeout_ms,
            auto_migrate=storage.migrate,
        )
    return opened[component]


def ops_team_databases(host: OpsHost) -> list[tuple[str, Any]]:
    """``(component, database)`` for each of the host's components the config turns on."""
    if host.loaded.config.storage is None:
        return []
    return [(component, ops_database(host, component)) for component in _wanted(host)]
