"""OpenTelemetry traces of tool calls, only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and the
``hostd[otel]`` extra is installed; otherwise nothing is imported and nothing is exported.

The provider is installed as the global one, so the MCP SDK's own request spans (``tools/call
TOOL``, kind SERVER, which continue the trace context a 2026-07-28 client sends in ``_meta``) are
exported too. Under each, hostd adds ``execute_tool TOOL`` (kind INTERNAL, the OpenTelemetry
GenAI/MCP semantic conventions) with ``gen_ai.tool.name``, ``gen_ai.operation.name``,
``mcp.method.name``, ``hostd.plugin``, ``enduser.id`` (the member) and ``hostd.outcome``, and
``error.type`` (the error code, status ERROR) when the tool answered an error, which the SDK's
span cannot tell apart. The span is current while the tool runs, so the statement spans of
``hostd_db.spans``, the spans plugins open with ``hostd.trace_span`` (the WeChat fetches) and
those of libraries the operator instruments nest under it. The standard ``OTEL_*`` variables
(service name, headers, batch delay, ...) apply.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hostd.core.observe import OK, CallSpan

if TYPE_CHECKING:
    from hostd.core.host import Host

logger = logging.getLogger("hostd.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class _Span:
    def __init__(self, span: Any) -> None:
        self.span = span

    def finish(self, outcome: str) -> None:
        self.span.set_attribute("hostd.outcome", outcome)
        if outcome != OK:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", outcome)
            self.span.set_status(Status(StatusCode.ERROR, outcome))


class OtelTracer:
    """The ``CallTracer`` over an OpenTelemetry tracer provider of this process."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("hostd")

    @contextmanager
    def span(self, tool: str, plugin: str, member: str) -> Iterator[CallSpan]:
        from opentelemetry.trace import SpanKind

        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": tool,
            "gen_ai.operation.name": "execute_tool",
            "hostd.plugin": plugin,
            "enduser.id": member,
        }
        with self.tracer.start_as_current_span(
            f"execute_tool {tool}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,  # a tool's exception is answered as an envelope, never leaked
        ) as span:
            yield _Span(span)

    def shutdown(self) -> None:
        """Export what is still batched (at shut-down)."""
        self.provider.shutdown()


def install_tracing(host: Host) -> OtelTracer | None:
    """Traces for this host's calls when an OTLP endpoint is configured; ``None`` otherwise."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
            "pip install 'hostd[otel]' to export traces"
        )
        return None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hostd")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    from opentelemetry import trace

    trace.set_tracer_provider(provider)  # the SDK's request spans go out through it too
    from hostd_db.spans import tracing_changed

    tracing_changed()  # statement and fetch spans (``hostd.trace_span``) go to it from now on
    tracer = OtelTracer(provider)
    host.observers.tracer = tracer
    return tracer
