"""Whether a ``hostd serve`` replica is ready for traffic, for ``/readyz``.

A load balancer asks ``/readyz`` and sends nothing to a replica that answers 503. The answer
says only ready / not ready: the reason (which check failed, and why) goes to the log, since
the endpoint needs no token and must reveal nothing about the server.

Checks are plain functions returning ``None`` when ready, else the reason. They run in a
worker thread (a database ping may block) and must be quick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostd.core.host import Host

logger = logging.getLogger("hostd.health")

ReadinessCheck = Callable[[], "str | None"]


class Readiness:
    """Named readiness checks; ready when every one answers ``None``."""

    def __init__(self) -> None:
        self._checks: dict[str, ReadinessCheck] = {}
        self._last_reason: str | None = None

    def add(self, name: str, check: ReadinessCheck) -> None:
        self._checks[name] = check

    def names(self) -> list[str]:
        return list(self._checks)

    def reason_not_ready(self) -> str | None:
        """``None`` when ready, else why not (``name: reason``); a check that raises is not ready."""
        for name, check in self._checks.items():
            try:
                reason = check()
            except Exception as exc:
                reason = f"check raised {type(exc).__name__}: {exc}"
            if reason is not None:
                reason = f"{name}: {reason}"
                if reason != self._last_reason:  # log each new reason once, not at every probe
                    logger.warning("not ready: %s", reason)
                self._last_reason = reason
                return reason
        if self._last_reason is not None:
            logger.info("ready again")
            self._last_reason = None
        return None


class PluginsStarted:
    """Ready once the profile's plugins ran their start-up hooks; ``hostd serve`` flips it."""

    def __init__(self) -> None:
        self.started = False

    def __call__(self) -> str | None:
        return None if self.started else "the plugins have not started (or are shutting down)"


def storage_reachable(host: Host) -> ReadinessCheck:
    """Ready when every plugin's tables in the ``storage`` database answer and their schema is current.

    Without ``storage`` (the SQLite stores in ``data_dir``) there is nothing remote to reach.
    """

    def check() -> str | None:
        if host.loaded.config.storage is None:
            return None
        from hostd.core.errors import HostError

        try:
            statuses = host.prepare_team_databases(migrate=False)
        except HostError as exc:  # unreachable, or a newer schema: the message names host:port/db only
            return str(exc)
        behind = [name for name, status in statuses if status.pending or status.too_new]
        return f"schema not current for {', '.join(behind)}" if behind else None

    return check


def host_readiness(host: Host, plugins: PluginsStarted) -> Readiness:
    """The checks ``hostd serve`` answers ``/readyz`` with."""
    readiness = Readiness()
    readiness.add("plugins", plugins)
    readiness.add("storage", storage_reachable(host))
    return readiness
