"""The one access policy: may this member use this tool?

Decided from parsed data only: the member (their profile and, for an OAuth token, its scopes)
and the tool's access class as its plugin declared it (``read`` or ``write``). Every surface asks
the same object: the call pipeline before it runs a tool, the MCP lists before they show one,
the HTTP guard before it lets a call through (for the ``403 insufficient_scope`` a client can
act on), and the dashboard before it draws a link or a button.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hostd.core.identity import Member

if TYPE_CHECKING:
    from hostd.core.host import Host
    from hostd.core.tools import ToolSpec

RefusalReason = Literal["unknown_tool", "outside_profile", "missing_scope"]


@dataclass(frozen=True)
class Refusal:
    """Why a member may not use a tool. ``scopes`` are the scopes they lack (``missing_scope``)."""

    reason: RefusalReason
    tool: str
    scopes: tuple[str, ...] = ()

    @property
    def code(self) -> str:
        """The envelope code: a tool outside the member's profile is answered as an unknown one."""
        return "PERMISSION_DENIED" if self.reason == "missing_scope" else "NOT_FOUND"


class AccessPolicy:
    """Who may see and call which of a host's tools.

    A member's profile is another profile of the same config: their tools are those the served
    profile also serves under the same name from the same plugin (worked out once per profile
    and kept). A member whose token carries scopes needs the read scopes for anything and the
    write scopes for a ``write`` tool.
    """

    def __init__(
        self, host: Host, *, read_scopes: Collection[str] = (), write_scopes: Collection[str] = ()
    ) -> None:
        self._host = host
        self.read_scopes = tuple(read_scopes)
        self.write_scopes = tuple(write_scopes)
        self._by_profile: dict[str, frozenset[str]] = {}

    @classmethod
    def for_host(cls, host: Host) -> AccessPolicy:
        """The policy of the host's profile: the scopes its ``transport.oauth`` names, if any."""
        oauth = host.loaded.profile.transport.oauth
        if oauth is None:
            return cls(host)
        return cls(host, read_scopes=oauth.scopes.read, write_scopes=oauth.scopes.write)

    @property
    def lists_alike(self) -> bool:
        """Whether every member is shown the same tools (and resource templates): a member's
        profile can only be another profile of the same config, so when it has no other profile
        than the served one, no member's list differs from anyone's."""
        loaded = self._host.loaded
        return set(loaded.config.profiles) <= {loaded.profile_name}

    # --- the answers ------------------------------------------------------------------------

    def check(self, member: Member | None, tool: str) -> Refusal | None:
        """``None`` when ``member`` may call ``tool`` (a served name), else why not."""
        spec = self._host.tools.get(tool)
        if spec is None:
            return Refusal("unknown_tool", tool)
        if not self.lists(member, tool):
            return Refusal("outside_profile", tool)
        missing = self.missing_scopes(member, spec)
        if missing:
            return Refusal("missing_scope", tool, missing)
        return None

    def may(self, member: Member | None, tool: str) -> bool:
        """Whether ``member`` may call the served tool ``tool``."""
        return self.check(member, tool) is None

    def lists(self, member: Member | None, tool: str) -> bool:
        """Whether ``tool`` is one of the member's tools (shown in their lists, even when their
        token's scopes do not let them call it: a client asks its user for more)."""
        allowed = self.tools_for(member)
        return tool in self._host.tools and (allowed is None or tool in allowed)

    def missing_scopes(self, member: Member | None, spec: ToolSpec) -> tuple[str, ...]:
        """The scopes the member's token lacks for this tool (none without a token's scopes)."""
        if member is None or member.scopes is None:
            return ()
        needed = self.read_scopes + (self.write_scopes if spec.access == "write" else ())
        return tuple(dict.fromkeys(scope for scope in needed if scope not in member.scopes))

    def tools_for(self, member: Member | None) -> frozenset[str] | None:
        """The tool names of the member's profile, ``None`` for every served tool."""
        host = self._host
        if member is None or member.profile is None or member.profile == host.loaded.profile_name:
            return None
        if member.profile not in self._by_profile:
            self._by_profile[member.profile] = self._tools_of(member.profile)
        return self._by_profile[member.profile]

    def _tools_of(self, profile_name: str) -> frozenset[str]:
        from hostd.core.host import Host

        host = self._host
        loaded = host.loaded
        profile = loaded.config.profiles.get(profile_name)
        if profile is None:  # the tokens file was checked against the config: cannot happen
            return frozenset()
        limited = dataclasses.replace(loaded, profile_name=profile_name, profile=profile)
        other = Host(limited, cwd=host.cwd, extra_plugins=host.extra_plugins)
        served = host.tools
        return frozenset(
            name
            for name, spec in other.tools.items()
            if name in served and served[name].plugin == spec.plugin
        )
