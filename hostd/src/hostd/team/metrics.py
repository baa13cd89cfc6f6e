"""Prometheus metrics of a serving replica (``transport.metrics``).

Names follow the OpenTelemetry semantic conventions for MCP where they define one, written the
Prometheus way (dots to underscores, the unit as a suffix): ``mcp_server_operation_duration_seconds``
with ``mcp_method_name``, ``gen_ai_tool_name`` and ``error_type`` (absent on success) labels.
What the conventions do not cover is ``hostd_*``:

- ``hostd_tool_calls_total{member, gen_ai_tool_name, outcome}``: calls per member;
- ``hostd_tool_errors_total{error_type, gen_ai_tool_name}``: errors by code;
- ``hostd_tool_calls_in_flight{gen_ai_tool_name}``: calls running now;
- ``hostd_fetches_in_flight{plugin}``: downloads running now, as plugins count them with
  ``ctx.fetching()`` (wechat: each page and image, its retries and redirects included; so not
  OpenTelemetry's ``http.client.active_requests``, which counts single HTTP requests);
- ``hostd_http_connections_open``, ``hostd_mcp_sessions_open``;
- ``hostd_db_pool_connections{plugin, state}`` (``open`` / ``idle``), ``hostd_db_pool_requests_waiting``,
  ``hostd_db_pool_waits_total``, ``hostd_db_pool_wait_seconds_total``, ``hostd_db_pool_lends_total``
  (connections lent: one per transaction or autocommit read, so lends per call is how many
  times a call goes to the pool): the team database's pools.

Each replica has its own registry (tests run several in one process); the values are read at
scrape time where they already exist (pools, connections, sessions), so serving pays only for
the per-call counters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sized
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hostd.core.observe import OK, CallRecord

if TYPE_CHECKING:
    from hostd.core.host import Host

logger = logging.getLogger("hostd.metrics")

#: Seconds: from a cached read (sub-millisecond) to a page fetch or a slow statement.
DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class _LiveValues(Collector):
    """Gauges read when Prometheus scrapes: nothing is counted on the serving path."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.connections: Sized | None = None  # uvicorn's set of open connections, once serving
        self.sessions: Callable[[], int] | None = None

    def collect(self) -> Iterator[Metric]:
        in_flight = GaugeMetricFamily(
            "hostd_tool_calls_in_flight", "Tool calls running now", labels=["gen_ai_tool_name"]
        )
        for tool, count in sorted(self.host.observers.in_flight.items()):
            in_flight.add_metric([tool], count)
        yield in_flight
        fetches = GaugeMetricFamily(
            "hostd_fetches_in_flight", "Downloads plugins have running now", labels=["plugin"]
        )
        for plugin, context in sorted(self.host.contexts.items()):
            fetches.add_metric([plugin], context.fetches_in_flight)
        yield fetches
        yield GaugeMetricFamily(
            "hostd_http_connections_open",
            "HTTP connections open, the long-lived streams included",
            value=len(self.connections) if self.connections is not None else 0,
        )
        yield GaugeMetricFamily(
            "hostd_mcp_sessions_open",
            "Stateful MCP sessions open",
            value=self.sessions() if self.sessions is not None else 0,
        )
        yield from self._pools()

    def _pools(self) -> Iterator[Metric]:
        connections = GaugeMetricFamily(
            "hostd_db_pool_connections", "Team database connections per plugin", labels=["plugin", "state"]
        )
        waiting = GaugeMetricFamily(
            "hostd_db_pool_requests_waiting", "Requests waiting for a connection now", labels=["plugin"]
        )
        waits = GaugeMetricFamily(
            "hostd_db_pool_waits_total", "Requests that had to wait for a connection", labels=["plugin"]
        )
        waited = GaugeMetricFamily(
            "hostd_db_pool_wait_seconds_total", "Time spent waiting for a connection", labels=["plugin"]
        )
        lends = CounterMetricFamily(
            "hostd_db_pool_lends",
            "Connections lent (one per transaction or autocommit read)",
            labels=["plugin"],
        )
        for plugin, stats in self._pool_stats():
            connections.add_metric([plugin, "open"], stats.get("pool_size", 0))
            connections.add_metric([plugin, "idle"], stats.get("pool_available", 0))
            waiting.add_metric([plugin], stats.get("requests_waiting", 0))
            waits.add_metric([plugin], stats.get("requests_queued", 0))
            waited.add_metric([plugin], stats.get("requests_wait_ms", 0) / 1000)
            lends.add_metric([plugin], stats.get("requests_num", 0))
        yield from (connections, waiting, waits, waited, lends)

    def _pool_stats(self) -> Iterator[tuple[str, dict[str, int]]]:
        if self.host.loaded.config.storage is None:
            return
        try:
            databases = self.host.team_databases()
        except Exception:
            logger.exception("team databases not listed for the metrics")
            return
        for plugin, database in databases:
            # A plugin's database (``PostgresBackend``) or the host's own (``PostgresDatabase``);
            # only a pool already opened by a call: a scrape must not open one.
            stats = database.pool_stats()
            if stats is not None:
                yield plugin, stats


class Metrics:
    """The metrics of one host; ``observe`` is its call observer."""

    def __init__(self, host: Host) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.duration = Histogram(
            "mcp_server_operation_duration",
            "Duration of MCP requests handled by the server (tools/call)",
            ["mcp_method_name", "gen_ai_tool_name", "hostd_plugin", "error_type"],
            unit="seconds",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.calls = Counter(
            "hostd_tool_calls",
            "Tool calls per member, tool and outcome (ok or the error code)",
            ["member", "gen_ai_tool_name", "outcome"],
            registry=self.registry,
        )
        self.errors = Counter(
            "hostd_tool_errors",
            "Tool calls answered with an error, by code",
            ["error_type", "gen_ai_tool_name"],
            registry=self.registry,
        )
        self.refused = Counter(
            "hostd_refused_attempts",
            "Calls and requests refused before a tool ran (an unknown tool, one outside the member's "
            "profile, a missing scope, a 401/403/429 at the door), by surface and outcome",
            ["surface", "outcome"],
            registry=self.registry,
        )
        self.live = _LiveValues(host)
        self.registry.register(self.live)

    def observe(self, record: CallRecord) -> None:
        if not record.plugin:  # refused before a served tool ran: no tool label a caller could choose
            self.refused.labels(record.surface, record.outcome).inc()
            return
        error_type = "" if record.outcome == OK else record.outcome
        self.duration.labels("tools/call", record.tool, record.plugin, error_type).observe(record.duration)
        self.calls.labels(record.member, record.tool, record.outcome).inc()
        if error_type:
            self.errors.labels(error_type, record.tool).inc()

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape answer in the format the scraper asked for, and its content type."""
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """``GET /metrics``: the metrics object is the route's ASGI app."""
        from starlette.responses import Response

        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        body, content_type = self.exposition(headers.get("accept"))
        await Response(body, headers={"Content-Type": content_type})(scope, receive, send)


def install_metrics(host: Host) -> Metrics:
    """Metrics for this host's calls, from now on."""
    metrics = Metrics(host)
    host.observers.add(metrics.observe)
    return metrics


def serve_on_own_port(
    metrics: Metrics,
    host: str,
    port: int,
    host_check: Callable[[int], Callable[[str], bool]] | None = None,
    refusal: str = "Misdirected request: Host not allowed (transport.metrics.allowed_hosts)",
) -> Callable[[], None]:
    """``/metrics`` on its own address (a thread serving prometheus-client's WSGI app); the stop function.

    ``host_check(bound_port)`` says which Host headers are answered; others get 421 ``refusal``.
    """
    import socket
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client.exposition import ThreadingWSGIServer, make_wsgi_app

    scrape = make_wsgi_app(metrics.registry)
    allowed: list[Callable[[str], bool]] = []

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if allowed and not allowed[0](environ.get("HTTP_HOST", "")):
            body = refusal.encode()
            start_response(
                "421 Misdirected Request",
                [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
            )
            return [body]
        return scrape(environ, start_response)

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class Server(ThreadingWSGIServer):
        address_family = family

    from hostd.core.environment import port_in_use

    try:
        server = make_server(host, port, app, Server, handler_class=Quiet)
    except OSError as exc:
        raise port_in_use(exc, host, port, "transport.metrics.port") from None
    if host_check is not None:
        allowed.append(host_check(server.server_port))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    logger.info("metrics on http://%s:%s/metrics", host, server.server_port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop
