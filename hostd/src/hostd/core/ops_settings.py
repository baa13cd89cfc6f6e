"""Config sections for running a server in a team: metrics, the audit trail, quotas.

Kept apart from ``config`` so that file stays about profiles and transports; every model here is
plain pydantic, imported on every config load (no exporter or database is imported here).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Bind addresses that stand for every interface: no Host can be derived from them.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricsConfig(_Strict):
    """``transport.metrics``: Prometheus metrics of an HTTP server."""

    enabled: bool = True
    port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="serve /metrics on this port of metrics_host instead, without a token "
        "(default: /metrics on the server's own port, behind its token)",
    )
    host: str = Field(default="127.0.0.1", description="the address of the metrics port")
    operators: list[str] = Field(
        default_factory=list,
        description="members who may read /metrics on the server's own port (default: nobody; a server "
        "with no tokens at all, loopback only, keeps it open)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host values scrapers send to the metrics port (421 for others; the metrics address "
        "and loopback are always allowed); required when host is 0.0.0.0 or ::",
    )

    @model_validator(mode="after")
    def _wildcard_needs_hosts(self) -> MetricsConfig:
        if self.port is not None and self.host in WILDCARD_HOSTS and not self.allowed_hosts:
            raise ValueError(
                f"metrics on {self.host}: list the Host values scrapers send in allowed_hosts "
                "(e.g. ['10.0.0.11:9464']): others are answered 421"
            )
        return self


class AuditConfig(_Strict):
    """``audit`` (top level): every tool call recorded: who, what, outcome, duration, never the content.

    Without ``storage`` the trail is a rotated JSON Lines file in ``data_dir/audit/``; with it, a
    table in the team database that every replica writes to.
    """

    enabled: bool = True
    retention_days: float = Field(default=90, gt=0, le=3650, description="older records are pruned")
    max_file_bytes: int = Field(
        default=10 * 1024 * 1024, ge=4096, description="local file: rotated when it grows past this"
    )
    backups: int = Field(default=5, ge=1, le=100, description="local file: rotated files kept")
    digest_key_env: str | None = Field(
        default=None,
        description="an environment variable holding the key of the arguments' digest (at least 32 bytes, "
        "the same on every replica); default: a key made once in data_dir/audit.key",
    )


class Rate(_Strict):
    """A token bucket: ``calls_per_minute`` refilled evenly, up to ``burst`` at once
    (default: a minute's worth)."""

    calls_per_minute: float = Field(gt=0, le=1_000_000)
    burst: int | None = Field(default=None, ge=1, le=1_000_000)

    @property
    def capacity(self) -> float:
        return float(self.burst) if self.burst is not None else max(1.0, self.calls_per_minute)


class MemberLimits(Rate):
    requests_per_minute: float | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="HTTP requests per member (429 with Retry-After above, before the body is read); "
        "shared by the replicas with storage, else counted per replica",
    )


class LimitsConfig(_Strict):
    """``limits`` (top level): quotas per member, and per member and tool.

    With ``storage`` the call buckets live in the team database, shared by every replica;
    without it each process keeps its own.
    """

    per_member: MemberLimits | None = None
    tools: dict[str, Rate] = Field(default_factory=dict, description="tool name -> a member's rate for it")
