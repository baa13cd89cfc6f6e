"""Optional OpenTelemetry spans: a statement's, a fetch's, under the host's ``execute_tool`` span.

Only the OpenTelemetry *API* is used, and only when it is importable and a tracer provider has
been set (the host sets one when an OTLP endpoint is configured, ``hostd.team.tracing``, and then
calls ``tracing_changed``); otherwise ``active_tracer()`` is ``None`` (looked up once, cached) and
nothing is wrapped, so a statement costs what it did. The
host re-exports ``trace_span`` as ``hostd.trace_span`` for plugins, which may not import this
package's internals.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "TraceSpan",
    "TracedConnection",
    "active_tracer",
    "statement_span",
    "trace_span",
    "tracing_changed",
]

_api: Any = None  # the ``opentelemetry.trace`` module, once a provider is found
_UNKNOWN = object()
_tracer: Any = _UNKNOWN  # looked up on first use, then cached: the off path is one comparison


def active_tracer() -> Any:
    """The tracer spans go to, or ``None`` when OpenTelemetry is not installed or no provider is
    set (looked up once; ``tracing_changed`` looks again)."""
    global _tracer
    if _tracer is _UNKNOWN:
        _tracer = _look_up_tracer()
    return _tracer


def tracing_changed() -> None:
    """Look for the tracer provider again: the host calls this once it has set one."""
    global _tracer
    _tracer = _UNKNOWN


def _look_up_tracer() -> Any:
    global _api
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):  # nobody set one: spans would go nowhere
        return None
    _api = trace
    return provider.get_tracer("hostd")


class TraceSpan:
    """What the body of ``trace_span`` may add to its span; does nothing when tracing is off."""

    def __init__(self, span: object = None) -> None:
        # An OpenTelemetry span, from the optional SDK the type checker may not have: kept untyped.
        self._span: Any = span

    def set(self, key: str, value: str | int | float | bool) -> None:
        if self._span is not None:
            self._span.set_attribute(key, value)

    def fail(self, error_type: str) -> None:
        """Mark the operation failed (``error.type``, status ERROR) without an exception."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_attribute("error.type", error_type)
            self._span.set_status(Status(StatusCode.ERROR, error_type))


_OFF = TraceSpan()


@contextmanager
def trace_span(
    name: str, kind: str = "INTERNAL", **attributes: str | int | float | bool
) -> Iterator[TraceSpan]:
    """A span named ``name`` (``kind``: ``INTERNAL``, ``CLIENT``, ...) around the body, current
    while it runs, when tracing is on; a no-op handle otherwise."""
    tracer = active_tracer()
    if tracer is None:
        yield _OFF
        return
    span_kind = getattr(_api.SpanKind, kind)
    with tracer.start_as_current_span(name, kind=span_kind, attributes=attributes) as span:
        yield TraceSpan(span)


def _operation(sql: str) -> str:
    words = sql.lstrip(" \t\r\n(").split(None, 1)
    return words[0].upper() if words else "UNKNOWN"


def statement_span(tracer: Any, system: str, namespace: str, sql: str) -> Any:
    """A client span around one statement (OpenTelemetry's database conventions: system,
    operation, namespace; never the parameters)."""
    operation = _operation(sql)
    return tracer.start_as_current_span(
        f"{operation} {namespace}",
        kind=_api.SpanKind.CLIENT,
        attributes={"db.system": system, "db.operation.name": operation, "db.namespace": namespace},
    )


class TracedConnection:
    """A SQLite connection whose ``execute``/``executemany`` each run in a statement span;
    everything else is the connection's own. Handed out only while tracing is on."""

    def __init__(self, connection: Any, tracer: Any, namespace: str) -> None:
        self._connection = connection
        self._tracer = tracer
        self._namespace = namespace

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        with statement_span(self._tracer, "sqlite", self._namespace, sql):
            return self._connection.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        with statement_span(self._tracer, "sqlite", self._namespace, sql):
            return self._connection.executemany(sql, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)
