"""An in-process host for a plugin's tests, without reaching into the host's internals.

Plugin tests used to build hosts by hand (``Host(config_from_mapping(...))``, ``startup``,
``shutdown``, the member around a call, the dashboard's policy and sign-in): each copy
tied the plugin's tests to the host's private modules. ``make_host`` is the one way in:

    with make_host(["tasks"], data_dir=hostd_data_dir, config=backend) as host:
        created = anyio.run(host.ok, "create_task", {"title": "a"})
        links = host.service("tasks.links")
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from hostd.core.config import TransportConfig, config_from_mapping
from hostd.core.context import shared_lock_dir
from hostd.core.errors import HostError
from hostd.core.host import Host
from hostd.core.identity import Member, acting_as, local_member

from hostd_testing.clients import profile_config

Envelope = dict[str, Any]

# What a plugin's tests may need of the host beside a running one: who an in-process call is
# made for (``local_member()``), the folder of the cross-process file locks the host's writers
# take (``shared_lock_dir()``, to hold a file as another writer would), and the error a config
# the host refuses raises at start-up (``HostError``).


class PluginHost:
    """A started host: call its tools (as a member), look up services, serve its dashboard."""

    def __init__(self, host: Host) -> None:
        self._host = host

    @property
    def language(self) -> str:
        return str(self._host.language)

    async def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, member: str | None = None
    ) -> tuple[Envelope, bool]:
        """The envelope of one call and whether it is an error, as ``member`` when given
        (what that member's token would make it; else the local login name)."""
        with acting_as(Member(member) if member is not None else None):
            envelope, is_error = await self._host.call(tool, dict(arguments or {}))
        return dict(envelope), is_error

    async def ok(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, member: str | None = None
    ) -> Envelope:
        """Call a tool that must succeed; return its envelope."""
        envelope, is_error = await self.call(tool, arguments, member=member)
        assert not is_error, envelope
        assert envelope.get("status") == "success", envelope
        return envelope

    def shutdown(self) -> None:
        """Run the plugins' shut-down hooks and close what they opened."""
        self._host.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def service(self, name: str) -> Any:
        """The service another plugin offers under ``name`` (``None`` when it is not loaded)."""
        return self._host.services.find(name)

    def dashboard(self, tokens_file: Path, *, local_member: str = "local") -> Any:
        """The dashboard alone as an ASGI app, its members read from ``tokens_file`` (a tokens
        YAML as ``transport.tokens_file`` takes), signed in through its sign-in page."""
        from hostd.protocol.guard import HttpPolicy
        from hostd.web.app import SignIn
        from hostd.web.serve import dashboard_app
        from hostd.web.signing import Signer

        transport = TransportConfig(type="http", tokens_file=str(tokens_file))
        policy = HttpPolicy(transport, self._host.language, known_profiles=self._host.loaded.config.profiles)
        sign_in = SignIn(local_member=local_member, members=policy.members)
        return dashboard_app(self._host, signer=Signer(None), sign_in=sign_in, policy=policy)


def make_host(
    plugins: list[str] | None = None,
    *,
    data_dir: Path,
    config: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    profile: str | None = None,
    extra_plugins: Mapping[str, object] | None = None,
    cwd: Path | None = None,
    migrate: bool = False,
) -> PluginHost:
    """A started host over ``plugins`` (entry-point names): ``with make_host(...) as host:`` shuts
    it down when the block ends; a worker process that keeps it for its whole life calls
    ``host.shutdown()`` itself.

    ``config`` is a whole config mapping (as the YAML would hold, e.g. the ``backend`` fixture's
    ``storage``); ``settings`` is merged into its ``plugins`` section. ``migrate`` brings the
    team database's tables up to date first, as ``hostd db migrate`` would.
    """
    raw = profile_config(plugins, dict(config) if config else None, dict(settings) if settings else None)
    host = Host(config_from_mapping(raw, profile, data_dir=data_dir), extra_plugins=extra_plugins, cwd=cwd)
    if migrate and "storage" in raw:
        host.prepare_team_databases(migrate=True)
    host.startup()
    return PluginHost(host)


#: ``make_host`` under the name worker processes use for a host they keep for their whole life.
start_host = make_host


__all__ = [
    "Envelope",
    "HostError",
    "PluginHost",
    "local_member",
    "make_host",
    "shared_lock_dir",
    "start_host",
]
