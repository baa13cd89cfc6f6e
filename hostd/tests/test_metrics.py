"""Prometheus metrics of a serving replica: what ``/metrics`` says after real calls, on the
server's port behind its token or on a loopback port of its own, and Debian's Prometheus
scraping a replica and answering a PromQL query with the calls made."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hostd_testing import HttpServer, write_config
from hostd_testing.processes import free_port, stop_process
from prometheus_client.parser import text_string_to_metric_families
from team_support import install_team_plugins, write_tokens

pytestmark = pytest.mark.anyio

ALICE = "alice-metrics-token-0123456789"
BOB = "bob-metrics-token-0123456789ab"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def served(folder: Path, metrics: dict[str, Any]) -> Any:
    env = install_team_plugins(folder)
    tokens = write_tokens(folder / "tokens.yaml", {"alice": ALICE, "bob": BOB})
    transport = {"type": "http", "tokens_file": str(tokens), "metrics": metrics}
    config = write_config(
        folder, config={"profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}}}
    )
    return HttpServer.start(config, env=env)


async def calls(server: HttpServer, token: str, plan: list[tuple[str, dict[str, Any]]]) -> None:
    async with server.client(headers={"Authorization": f"Bearer {token}"}) as client:
        for name, arguments in plan:
            await client.call_tool(name, arguments)


async def test_metrics_on_the_servers_port_need_the_token(tmp_path: Path) -> None:
    with served(tmp_path, {"enabled": True, "operators": ["bob"]}) as server:
        await calls(server, ALICE, [("whoami", {}), ("whoami", {}), ("fail", {"kind": "tool_error"})])
        await calls(server, BOB, [("echo", {"text": "hi"})])
        assert httpx2.get(f"{server.base}/metrics", timeout=10).status_code == 401
        response = httpx2.get(
            f"{server.base}/metrics", headers={"Authorization": f"Bearer {BOB}"}, timeout=10
        )
    assert response.status_code == 200
    found = samples(response.text)

    def value(name: str, **labels: str) -> float:
        return found.get((name, frozenset(labels.items())), 0.0)

    assert value("hostd_tool_calls_total", member="alice", gen_ai_tool_name="whoami", outcome="ok") == 2
    assert value("hostd_tool_calls_total", member="alice", gen_ai_tool_name="fail", outcome="CONFLICT") == 1
    assert value("hostd_tool_calls_total", member="bob", gen_ai_tool_name="echo", outcome="ok") == 1
    assert value("hostd_tool_errors_total", error_type="CONFLICT", gen_ai_tool_name="fail") == 1
    histogram = {
        "mcp_method_name": "tools/call",
        "gen_ai_tool_name": "whoami",
        "hostd_plugin": "team",
        "error_type": "",
    }
    assert value("mcp_server_operation_duration_seconds_count", **histogram) == 2
    assert 0 < value("mcp_server_operation_duration_seconds_sum", **histogram) < 5
    assert value("hostd_http_connections_open") >= 1  # the scrape's own connection
    assert ("hostd_mcp_sessions_open", frozenset()) in found


CAROL = "carol-metrics-token-0123456789"


async def test_metrics_on_the_servers_port_are_for_operators_only(tmp_path: Path) -> None:
    """Only the members ``transport.metrics.operators`` names read ``/metrics`` on the server's
    port: the others (a member on a restricted profile too) get 403, and nothing of the metrics,
    so not the names of the tools their profile hides."""
    env = install_team_plugins(tmp_path)
    tokens = write_tokens(
        tmp_path / "tokens.yaml", {"alice": ALICE, "bob": BOB, "carol": {"token": CAROL, "profile": "narrow"}}
    )
    transport = {"type": "http", "tokens_file": str(tokens), "metrics": {"operators": ["bob"]}}
    profiles = {
        "default": {"plugins": ["probe", "team"], "transport": transport},
        "narrow": {"plugins": ["probe", "team"], "tools": {"probe": {"exclude": ["fail", "noisy"]}}},
    }
    config = write_config(tmp_path, config={"language": "en", "profiles": profiles})
    with HttpServer.start(config, env=env) as server:
        await calls(server, ALICE, [("fail", {"kind": "tool_error"})])
        scrape = {
            name: httpx2.get(
                f"{server.base}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
            for name, token in [("alice", ALICE), ("bob", BOB), ("carol", CAROL)]
        }
    assert scrape["bob"].status_code == 200
    assert 'gen_ai_tool_name="fail"' in scrape["bob"].text
    for name in ("alice", "carol"):
        assert scrape[name].status_code == 403
        assert (
            scrape[name].text
            == "Forbidden: /metrics is for the operators named in transport.metrics.operators"
        )


def test_metrics_on_the_servers_port_are_for_nobody_by_default(tmp_path: Path) -> None:
    with served(tmp_path, {}) as server:
        for token in (ALICE, BOB):
            answer = httpx2.get(
                f"{server.base}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
            assert answer.status_code == 403
            assert "transport.metrics.operators" in answer.text


def test_the_metrics_port_answers_only_its_own_hosts(tmp_path: Path) -> None:
    """The metrics port has no token: it answers a Host of its own address, loopback or
    ``metrics.allowed_hosts``, and 421 to any other (a DNS-rebinding page cannot read it)."""
    port = free_port()
    with served(tmp_path, {"port": port, "allowed_hosts": ["metrics.internal:9464"]}):
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx2.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
                break
            except httpx2.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)

        def status(host: str) -> int:
            answer = httpx2.get(f"http://127.0.0.1:{port}/metrics", headers={"Host": host}, timeout=10)
            if answer.status_code == 421:
                assert (
                    answer.text == "Misdirected request: Host not allowed (transport.metrics.allowed_hosts)"
                )
            return answer.status_code

        assert {
            host: status(host) for host in [f"127.0.0.1:{port}", f"localhost:{port}", "metrics.internal:9464"]
        } == {
            f"127.0.0.1:{port}": 200,
            f"localhost:{port}": 200,
            "metrics.internal:9464": 200,
        }
        assert {host: status(host) for host in [f"evil.example:{port}", "metrics.internal:1", ""]} == {
            f"evil.example:{port}": 421,
            "metrics.internal:1": 421,
            "": 421,
        }


def test_a_metrics_port_on_every_interface_needs_allowed_hosts() -> None:
    from hostd.core.ops_settings import MetricsConfig
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="allowed_hosts"):
        MetricsConfig(port=9464, host="0.0.0.0")
    assert MetricsConfig(port=9464, host="0.0.0.0", allowed_hosts=["10.0.0.11:9464"]).operators == []


def test_metrics_are_off_without_the_section(tmp_path: Path) -> None:
    env = install_team_plugins(tmp_path)
    config = write_config(
        tmp_path, config={"profiles": {"default": {"plugins": ["team"], "transport": {"type": "http"}}}}
    )
    with HttpServer.start(config, env=env) as server:
        assert httpx2.get(f"{server.base}/metrics", timeout=10).status_code == 404


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """Debian's Prometheus, scraping a metrics port (chosen here) every second; its API base URL."""
    if not Path(PROMETHEUS).exists():
        if os.environ.get("HOSTD_REQUIRE_PROMETHEUS") == "1":
            pytest.fail("prometheus is required (HOSTD_REQUIRE_PROMETHEUS=1): apt-get install prometheus")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    target = free_port()
    api_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
                "scrape_configs": [
                    {"job_name": "hostd", "static_configs": [{"targets": [f"127.0.0.1:{target}"]}]}
                ],
            }
        ),
        encoding="utf-8",
    )
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{api_port}",
        ],
        stdout=log,
        stderr=log,
    )
    log.close()
    try:
        yield f"http://127.0.0.1:{api_port}", target
    finally:
        stop_process(process)


@pytest.mark.slow
async def test_prometheus_scrapes_a_replica_and_promql_returns_the_calls(
    tmp_path: Path, prometheus: tuple[str, int]
) -> None:
    api, target = prometheus
    with served(tmp_path / "hostd", {"port": target}) as server:
        await calls(server, ALICE, [("whoami", {})] * 3 + [("echo", {"text": "x"})])
        await calls(server, BOB, [("whoami", {})] * 2)
        # No token on the metrics port: it listens on loopback only.
        assert httpx2.get(f"http://127.0.0.1:{target}/metrics", timeout=10).status_code == 200
        query = 'sum by (member) (hostd_tool_calls_total{gen_ai_tool_name="whoami"})'
        deadline = time.monotonic() + 60
        result: dict[str, float] = {}
        while time.monotonic() < deadline:
            answer = httpx2.get(f"{api}/api/v1/query", params={"query": query}, timeout=10)
            if answer.status_code == 200:
                data = answer.json()["data"]["result"]
                result = {item["metric"]["member"]: float(item["value"][1]) for item in data}
                if result == {"alice": 3.0, "bob": 2.0}:
                    break
            time.sleep(0.5)
    assert result == {"alice": 3.0, "bob": 2.0}
