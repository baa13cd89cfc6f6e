"""Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, a served replica exports, per tool call, the SDK's
request span (continuing the trace context a 2026-07-28 client sends in ``_meta``) and hostd's
``execute_tool`` span under it, to an OTLP/HTTP receiver started here that decodes what it
receives; without the variable the OpenTelemetry SDK is not even imported."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import HttpServer, write_config
from team_support import MODERN, install_team_plugins, post, write_tokens

ALICE = "alice-trace-token-0123456789"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Receiver:
    """An OTLP/HTTP trace receiver: the spans of every export it was sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.paths.append(self.path)
                for resource_spans in request.resource_spans:
                    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend((service, span) for span in scope_spans.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    pytest.importorskip("opentelemetry.sdk", reason="the hostd[otel] extra is not installed")
    found = Receiver()
    found.thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


def call(server: HttpServer, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
                **meta,
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Authorization": f"Bearer {ALICE}",
    }
    assert post(server.url, body, headers).status_code == 200


def serve(tmp_path: Path, env: dict[str, str]) -> Any:
    plugins_env = install_team_plugins(tmp_path)
    tokens = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE})
    transport = {"type": "http", "stateless": True, "tokens_file": str(tokens)}
    config = write_config(
        tmp_path, config={"profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}}}
    )
    return HttpServer.start(config, env={**plugins_env, **env})


def test_one_span_per_call_continuing_the_clients_trace(tmp_path: Path, receiver: Receiver) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "hostd-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    with serve(tmp_path, env) as server:
        call(server, "whoami", {}, {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
        call(server, "fail", {"kind": "tool_error"}, {})
    # The server exported what it had batched when it stopped.
    assert receiver.paths
    assert set(receiver.paths) == {"/v1/traces"}
    spans = {span.name: (service, span) for service, span in receiver.spans}
    assert set(spans) == {"tools/call whoami", "execute_tool whoami", "tools/call fail", "execute_tool fail"}
    service, request = spans["tools/call whoami"]
    assert service["service.name"] == "hostd-test"
    assert request.trace_id.hex() == TRACE_ID
    assert request.parent_span_id.hex() == PARENT_ID
    assert request.kind == 2  # SPAN_KIND_SERVER, the SDK's
    _, whoami = spans["execute_tool whoami"]
    assert whoami.trace_id.hex() == TRACE_ID
    assert whoami.parent_span_id == request.span_id
    assert whoami.kind == 1  # SPAN_KIND_INTERNAL
    attributes = {a.key: a.value.string_value for a in whoami.attributes}
    assert attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "whoami",
        "gen_ai.operation.name": "execute_tool",
        "hostd.plugin": "team",
        "enduser.id": "alice",
        "hostd.outcome": "ok",
    }
    _, failed_request = spans["tools/call fail"]
    _, failed = spans["execute_tool fail"]
    failed_attributes = {a.key: a.value.string_value for a in failed.attributes}
    assert failed_attributes["error.type"] == "CONFLICT"
    assert failed_attributes["enduser.id"] == "alice"
    assert failed.status.code == 2  # STATUS_CODE_ERROR
    assert failed.parent_span_id == failed_request.span_id
    assert failed.trace_id.hex() != TRACE_ID  # no trace context sent: a trace of its own


def test_without_the_variable_nothing_is_installed_or_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from hostd.core.config import config_from_mapping
    from hostd.core.host import Host
    from hostd.team.tracing import ENDPOINT_VARIABLES, install_tracing

    for name in ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    host = Host(config_from_mapping({"profiles": {"default": {"plugins": []}}}, data_dir=tmp_path))
    assert install_tracing(host) is None
    assert host.observers.tracer is None
    assert not host.observers
    code = (
        "import sys, hostd.cli.main, hostd.core.host, hostd.protocol.server, hostd.team.tracing, "
        "hostd.protocol.http\n"
        "loaded = ('opentelemetry.sdk', 'opentelemetry.exporter')\n"
        "print(sorted(m for m in sys.modules if m.startswith(loaded)))"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.anyio
async def test_statements_and_fetches_are_child_spans_of_the_tool_call(
    tmp_path: Path, hostd_roots: Path, receiver: Receiver
) -> None:
    """Over stdio, a memory write shows its SQL statements and a WeChat read its page fetch, each
    a CLIENT span under the tool call's ``execute_tool`` span; no parameter reaches a span."""
    from hostd_testing import served_client
    from hostd_testing.calls import call as call_tool
    from wechat_testlib import ArticleServer, plugin_settings

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with ArticleServer() as pages:
        config = write_config(
            tmp_path,
            ["memory", "wechat"],
            config={"allowed_roots": [str(hostd_roots)]},
            settings=plugin_settings(pages),
        )
        async with served_client(config, cwd=hostd_roots, env=env) as client:
            created = await call_tool(
                client, "create_memory", uri="project://secret-uri", content="the-secret-content", priority=1
            )
            assert created["status"] == "success", created
            page = pages.url("/s/article/7?sn=sig-secret")
            read = await call_tool(client, "read_wechat_articles", urls=[page])
            assert read["items"][0]["status"] == "ok", read
    spans = [span for _, span in receiver.spans]
    tools = {span.name: span for span in spans if span.name.startswith("execute_tool ")}
    assert set(tools) == {"execute_tool create_memory", "execute_tool read_wechat_articles"}

    def children(parent: Any) -> list[Any]:
        return [span for span in spans if span.parent_span_id == parent.span_id]

    def attributes(span: Any) -> dict[str, Any]:
        return {a.key: a.value.string_value or a.value.int_value for a in span.attributes}

    statements = children(tools["execute_tool create_memory"])
    assert statements
    assert all(span.kind == 3 for span in statements)
    operations = [attributes(span)["db.operation.name"] for span in statements]
    write = operations[: operations.index("COMMIT") + 1]
    assert write[0] == "BEGIN"
    assert "INSERT" in write
    assert write[-1] == "COMMIT"
    # Then create_memory looks for memories very like the new one: reads only.
    assert all(operation == "SELECT" for operation in operations[len(write) :])
    for span in statements:
        found = attributes(span)
        assert found["db.system"] == "sqlite"
        assert found["db.namespace"] == "memory.db"
        assert span.name == f"{found['db.operation.name']} {found['db.namespace']}"
        assert "secret" not in repr(span.attributes)

    (fetch,) = children(tools["execute_tool read_wechat_articles"])
    found = attributes(fetch)
    assert fetch.name == "GET"
    assert fetch.kind == 3
    assert found["http.request.method"] == "GET"
    assert found["http.response.status_code"] == 200
    assert found["url.full"] == pages.url("/s/article/7?sn=REDACTED")
