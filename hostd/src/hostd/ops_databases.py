"""The host's own tables in the team database: the audit trail and the shared quota buckets.

They live beside the plugins' schemas (``hostd_audit``, ``hostd_quotas``: prefixed so no plugin
name can collide) and are listed with them by ``Host.team_databases``, so start-up,
``hostd db migrate`` and ``hostd config check`` migrate and check them like the plugins' tables.
Each is opened once per host. Kept in this one module so it can follow the database layer when
its interface changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostd.host import Host

AUDIT = "hostd_audit"
QUOTAS = "hostd_quotas"


def _migrations(component: str) -> list[Any]:
    if component == AUDIT:
        from hostd.audit import MIGRATIONS as AUDIT_MIGRATIONS

        return list(AUDIT_MIGRATIONS)
    from hostd.quotas import MIGRATIONS as QUOTA_MIGRATIONS

    return list(QUOTA_MIGRATIONS)


def _wanted(host: Host) -> list[str]:
    """The components the config turns on."""
    config = host.loaded.config
    wanted = []
    if config.audit is not None and config.audit.enabled:
        wanted.append(AUDIT)
    limits = config.limits
    if limits is not None and (limits.per_member is not None or limits.tools):
        wanted.append(QUOTAS)
    return wanted


def ops_database(host: Host, component: str) -> Any:
    """The ``hostd_db.PostgresDatabase`` of one of the host's components (opened once per host)."""
    opened: dict[str, Any] = host.ops_databases
    if component not in opened:
        storage = host.loaded.config.storage
        assert storage is not None, "only with storage"
        from hostd_db import PostgresDatabase

        opened[component] = PostgresDatabase(
            host.loaded.database_url or "",
            component,
            _migrations(component),
            max_connections=min(storage.pool_size, 4),
            connect_timeout_s=storage.connect_timeout_seconds,
            statement_timeout_ms=storage.statement_timeout_ms,
            auto_migrate=storage.migrate,
        )
    return opened[component]


def ops_team_databases(host: Host) -> list[tuple[str, Any]]:
    """``(component, database)`` for each of the host's components the config turns on."""
    if host.loaded.config.storage is None:
        return []
    return [(component, ops_database(host, component)) for component in _wanted(host)]
