"""Config sections for running a server in a team: metrics, the audit trail, quotas.

Kept apart from ``config`` so that file stays about profiles and transports; every model here is
plain pydantic, imported on every config load (no exporter or database is imported here).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
