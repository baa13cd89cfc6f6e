"""The team deployment, end to end: the real nginx running ``deploy/nginx.conf`` in front of three
real stateless ``hostd serve`` replicas sharing one PostgreSQL database (``storage``), 8 members
working at once on both protocol eras, one replica killed (SIGKILL) and one stopped (SIGTERM)
mid-run, both restarted.

What is asserted, exactly (a client retries a call only when no replica answered it: a refused
or reset connection, 502/503/504 from nginx, or an answer stream cut short; see ``NoAnswer``):

- Every acknowledged write is present. A write acknowledged at its first attempt is present
  exactly once. A write retried after "no answer" may be present more than once (the lost
  attempt may have run before the replica died), but never more often than it was attempted.
- Memory: one memory, 2 members x 100 appends. Its version, and its count of stored versions, is
  1 + the appends applied (201 when no append was applied twice), the newest versions listed
  (as many as fit one answer) run without a gap, and every version's ``author`` (diff_versions
  against the version before) is the member whose append it added.
- Thoughts: one session, 2 members x 100 thoughts; sequence numbers run 1..N without a gap or a
  duplicate, N the thoughts applied, each thought's ``by`` the member who sent it.
- Tasks: 400 created by the 8 members (own ids, so a retried create answers ALREADY_EXISTS,
  counted as done; ``created_by`` the creator), then all 8 members claim until none is left: no
  task is acknowledged to two claims, every task ends claimed, each acknowledged claim's task has
  ``claimed_by`` the member who got it, a task whose claim nobody heard back about is held by a
  member who had a claim go unanswered, and those are no more than the claim attempts without an
  answer.
- Leases (their own test, one era): a claim whose holder goes silent lapses by the database's
  clock, whichever replica answers; another member takes the task; the silent member's late
  completion is CONFLICT naming the new holder and changes nothing; a claim renewed every 0.5 s
  through the balancer outlives its 2 s lease.
- The SIGTERMed replica exits 0, and a write that went unanswered while it was stopping was not
  run by it (it appears once: calls in flight are finished, not cut; a request that reached one of
  its idle kept-alive connections as it closed is refused unrun, nginx answers 502, the client
  retries). Every answer a member got is a real envelope (no tool error other
  than ALREADY_EXISTS for a retried create).

Through the same balancer, what else the shipped file must pass: OAuth discovery (the replicas
have ``transport.oauth`` beside the tokens file: a call without a token is refused with the
metadata URL, which answers), a legacy SSE session with the MCP SDK's ``sse_client``, and
``/readyz``; ``/metrics`` is not passed. The file itself is checked with ``nginx -t -c`` as a user
who cannot write /run (it names its own pid file), and the running nginx wrote its pid there.

The store backend is one fixture (``store_backend``): a fresh database on the session's
throw-away PostgreSQL server (``hostd_testing.postgres``), reached through ``storage.url_env``.
Without Debian's PostgreSQL or nginx the test skips, naming the package; CI sets
``HOSTD_REQUIRE_POSTGRES=1`` / ``HOSTD_REQUIRE_NGINX=1`` so it fails instead.
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hostd_testing.postgres import PostgresServer
from team_cluster import (
    HANDSHAKE,
    MODERN,
    NGINX_INSTALL,
    Balancer,
    NoAnswer,
    Replica,
    TeamClient,
    find_nginx,
    free_port,
    render_nginx_conf,
    start_together,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
MEMBERS = {f"m{i}": f"member-{i}-token-0123456789" for i in range(1, 9)}
STATE_SECRET = "team-test-state-secret-0123456789abcdef"
TASKS_PER_MEMBER = 50
APPENDS_PER_WRITER = 100
THOUGHTS_PER_THINKER = 100
MARK = re.compile(r"\[m\d-a\d+\]")  # what an append adds: [member-aN]
OAUTH_ISSUER = "https://id.example.internal"


@pytest.fixture(scope="module")
def nginx_binary() -> str:
    binary = find_nginx()
    if binary is None:
        if os.environ.get("HOSTD_REQUIRE_NGINX") == "1":
            pytest.fail(f"nginx is required (HOSTD_REQUIRE_NGINX=1) but not installed: {NGINX_INSTALL}")
        pytest.skip(f"nginx is not installed: {NGINX_INSTALL}")
    return binary


@dataclass
class StoreBackend:
    """What puts every replica on one shared store: config keys, the environment they name, and a
    way to ask the database itself (not a replica) a question."""

    config: dict[str, Any]
    env: dict[str, str]
    server: PostgresServer
    database: str

    def query(self, sql: str) -> str:
        return self.server.psql(sql, self.database).strip()


@pytest.fixture(scope="module")
def store_backend(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> StoreBackend:
    """A fresh database on the session's PostgreSQL server, named to the replicas by ``url_env``."""
    url = postgres_server.create_database("team")
    return StoreBackend(
        config={
            "data_dir": str(tmp_path_factory.mktemp("replica-data")),  # nothing kept there: all in PG
            "storage": {"url_env": "HOSTD_DATABASE_URL"},
        },
        env={"HOSTD_DATABASE_URL": url},
        server=postgres_server,
        database=url.rsplit("/", 1)[1],
    )


@dataclass
class Cluster:
    balancer: Balancer
    replicas: list[Replica]
    store: StoreBackend


@pytest.fixture(scope="module")
def cluster(
    nginx_binary: str, store_backend: StoreBackend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("team")
    tokens = folder / "tokens.yaml"
    tokens.write_text(yaml.safe_dump(MEMBERS), encoding="utf-8")
    transport = {
        "type": "http",
        "stateless": True,
        "tokens_file": str(tokens),
        "state_secret_env": "HOSTD_STATE_SECRET",
        "shutdown_grace_seconds": 20,
    }
    # OAuth beside the tokens file, so discovery can be checked through the balancer: the metadata
    # comes from this section alone (the provider is asked only to check a token that is not in the
    # tokens file, and every member here sends one that is).
    balancer_port = free_port()
    transport["oauth"] = {"issuer": OAUTH_ISSUER, "resource": f"http://127.0.0.1:{balancer_port}/mcp"}
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                **store_backend.config,
                "language": "en",
                "profiles": {
                    "team": {"plugins": ["memory", "deep-thinking", "tasks"], "transport": transport}
                },
            }
        ),
        encoding="utf-8",
    )
    env = {"HOSTD_STATE_SECRET": STATE_SECRET, "HOSTD_CACHE_DIR": str(folder / "cache"), **store_backend.env}
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(3)]
    balancer = Balancer(nginx_binary, folder / "nginx", balancer_port)
    try:
        start_together(replicas)
        balancer.start([replica.port for replica in replicas])
        yield Cluster(balancer, replicas, store_backend)
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()


@dataclass
class Ledger:
    """Every write's tag, how often it was attempted, and whether an answer acknowledged it."""

    attempts: Counter[str] = field(default_factory=Counter)
    acknowledged: set[str] = field(default_factory=set)
    unanswered: Counter[str] = field(default_factory=Counter)  # attempts with no answer, per tag
    done: int = 0
    phase: str = "steady"  # what the chaos has done so far
    unanswered_by_phase: Counter[str] = field(default_factory=Counter)

    unanswered_while_stopping: set[str] = field(default_factory=set)

    def no_answer(self, tag: str) -> None:
        self.unanswered[tag] += 1
        self.unanswered_by_phase[self.phase] += 1
        if self.phase == "sigterm":
            self.unanswered_while_stopping.add(tag)


async def until_answered(
    ledger: Ledger, tag: str, call: Callable[[], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """Run ``call`` until a replica answers it; count the attempts that got no answer."""
    for _ in range(40):
        ledger.attempts[tag] += 1
        try:
            envelope = await call()
        except NoAnswer:
            ledger.no_answer(tag)
            await anyio.sleep(0.1)  # a back-off between retries: the balancer re-routes meanwhile
            continue
        ledger.done += 1
        return envelope
    raise AssertionError(f"{tag}: no answer after 40 attempts")


async def chaos(cluster: Cluster, ledger: Ledger, total: int, exit_codes: list[int]) -> None:
    """SIGTERM one replica at 40% of the work, SIGKILL another at 65%; restart both.

    The 400 creates are the first third: both signals land while appends, thoughts and claims
    are all in flight."""

    async def wait_for(share: float) -> None:
        while ledger.done < total * share:
            await anyio.sleep(0.02)

    stopped, killed = cluster.replicas[2], cluster.replicas[1]
    await wait_for(0.4)
    ledger.phase = "sigterm"
    stopped.signal(signal.SIGTERM)
    exit_codes.append(await anyio.to_thread.run_sync(stopped.wait, 30))
    ledger.phase = "stopped"
    await wait_for(0.65)
    ledger.phase = "sigkill"
    killed.signal(signal.SIGKILL)
    await anyio.to_thread.run_sync(killed.wait, 30)
    await anyio.to_thread.run_sync(start_together, [stopped, killed])


@pytest.mark.parametrize("era", [HANDSHAKE, MODERN])
async def test_a_team_through_the_balancer(cluster: Cluster, era: str) -> None:
    await official_client_smoke(cluster, era)
    clients = {name: TeamClient(cluster.balancer.url, token, era) for name, token in MEMBERS.items()}
    names = list(clients)
    tag = era.replace("-", "")
    memory_uri, session_id = f"team://shared-{tag}", f"s-{tag}"
    ledger = Ledger()
    claims: dict[str, list[str]] = {name: [] for name in names}
    claims_unanswered: Counter[str] = Counter()  # per member: claim attempts that got no answer

    async def create_tasks(member: str) -> None:
        for k in range(TASKS_PER_MEMBER):
            task_id = f"{tag}-{member}-{k}"
            answer = await until_answered(
                ledger,
                task_id,
                functools.partial(
                    clients[member].call, "create_task", {"title": task_id, "task_id": task_id}
                ),
            )
            ok = answer["status"] == "success"
            assert ok or (answer["error"]["code"] == "ALREADY_EXISTS" and ledger.unanswered[task_id]), answer

    async def setup() -> None:
        created = await until_answered(
            ledger,
            "memory",
            lambda: clients["m1"].call("create_memory", {"uri": memory_uri, "content": "start"}),
        )
        assert created["status"] == "success" or created["error"]["code"] == "ALREADY_EXISTS"
        async with anyio.create_task_group() as creators:
            for member in names:
                creators.start_soon(create_tasks, member)

    async def append(member: str) -> None:
        for i in range(APPENDS_PER_WRITER):
            mark = f"[{member}-a{i}]"
            answer = await until_answered(
                ledger,
                mark,
                functools.partial(
                    clients[member].call,
                    "update_memory",
                    {"uri": memory_uri, "content": mark, "append": True},
                ),
            )
            assert answer["status"] == "success", answer
            ledger.acknowledged.add(mark)

    async def think(member: str) -> None:
        for i in range(THOUGHTS_PER_THINKER):
            mark = f"[{member}-t{i}]"
            arguments = {
                "thought": mark,
                "nextThoughtNeeded": True,
                "thoughtNumber": i + 1,
                "totalThoughts": THOUGHTS_PER_THINKER,
                "session_id": session_id,
            }
            answer = await until_answered(
                ledger,
                mark,
                functools.partial(clients[member].call, "sequential_thinking", arguments),
            )
            assert answer["status"] == "success", answer
            ledger.acknowledged.add(mark)

    async def claim(member: str) -> None:
        while True:
            try:
                answer = await clients[member].call("get_next_task", {"claim": True})
            except NoAnswer:
                claims_unanswered[member] += 1
                ledger.no_answer("claim")
                await anyio.sleep(0.1)
                continue
            ledger.done += 1
            assert answer["status"] == "success", answer
            if answer["task"] is None:
                return
            assert answer["claimed"] is True
            claims[member].append(answer["task"]["task_id"])

    total = 1 + len(names) * TASKS_PER_MEMBER * 2 + 2 * APPENDS_PER_WRITER + 2 * THOUGHTS_PER_THINKER
    exit_codes: list[int] = []
    started = time.monotonic()
    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(chaos, cluster, ledger, total, exit_codes)
                await setup()
                for member in ("m1", "m2"):
                    group.start_soon(append, member)
                for member in ("m3", "m4"):
                    group.start_soon(think, member)
                for member in names:
                    group.start_soon(claim, member)
    finally:
        for client in clients.values():
            await client.aclose()
    assert exit_codes == [0], "the SIGTERMed replica must finish its calls and exit 0"
    print(
        f"{era}: {ledger.done} calls in {time.monotonic() - started:.1f} s; "
        f"unanswered attempts by phase: {dict(ledger.unanswered_by_phase)}"
    )

    checker = TeamClient(cluster.balancer.url, MEMBERS["m8"], era)
    try:
        await check_memory(checker, ledger, memory_uri)
        await check_thoughts(checker, ledger, session_id)
        await check_tasks(checker, claims, tag, claims_unanswered)
    finally:
        await checker.aclose()
    # The replicas' store is the PostgreSQL database itself: its rows, not a replica's files.
    held = cluster.store.query(
        f"SELECT count(*) FROM tasks.tasks WHERE task_id LIKE '{tag}-%' AND status = 'in_progress'"
    )
    assert int(held) == len(MEMBERS) * TASKS_PER_MEMBER


async def test_leases_through_the_balancer(cluster: Cluster) -> None:
    """Claims are leases across replicas, lapsing by the database's clock: m1 claims and goes
    silent, m2 renews its own claim every 0.5 s through whichever replica nginx picks; m1's lease
    lapses (any replica then shows the task pending), m3 takes it, m1's late completion is refused
    naming m3, and m2's renewed claim outlives its 2 s lease."""
    clients = {
        name: TeamClient(cluster.balancer.url, MEMBERS[name], HANDSHAKE) for name in ("m1", "m2", "m3")
    }
    try:
        for task_id in ("lease-a", "lease-b"):
            created = await clients["m1"].call("create_task", {"title": task_id, "task_id": task_id})
            assert created["status"] == "success", created
        for member, task_id in (("m1", "lease-a"), ("m2", "lease-b")):
            claimed = await clients[member].call(
                "update_task_status", {"task_id": task_id, "new_status": "in_progress", "lease_seconds": 2}
            )
            assert claimed["task"]["claimed_by"] == member, claimed
            assert claimed["task"]["lease_expires_at"], claimed
        started = time.monotonic()
        lapsed: dict[str, Any] = {}
        while time.monotonic() - started < 15:
            await anyio.sleep(0.5)
            renewed = await clients["m2"].call("renew_claim", {"task_id": "lease-b"})
            assert renewed["status"] == "success", renewed
            lapsed = await clients["m3"].call("get_task", {"task_id": "lease-a"})
            if lapsed["task"]["status"] == "pending" and time.monotonic() - started > 3:
                break
        assert lapsed["task"]["status"] == "pending", lapsed
        assert lapsed["task"]["expired_claims"] == 1, lapsed
        assert lapsed["history"][-1]["event"] == "lease_expired"
        assert lapsed["history"][-1]["details"]["holder"] == "m1"
        taken = await clients["m3"].call(
            "update_task_status", {"task_id": "lease-a", "new_status": "in_progress", "lease_seconds": 60}
        )
        assert taken["task"]["claimed_by"] == "m3", taken
        assert taken["task"]["claim_count"] == 2, taken
        late = await clients["m1"].call(
            "update_task_status", {"task_id": "lease-a", "new_status": "completed"}
        )
        assert late["status"] == "error", late
        assert late["error"]["code"] == "CONFLICT", late
        assert late["error"]["details"]["holder"] == "m3"
        assert "m3" in late["error"]["message"]
        kept = await clients["m2"].call(
            "update_task_status", {"task_id": "lease-b", "new_status": "completed"}
        )
        assert kept["status"] == "success", kept
        assert kept["previous_status"] == "in_progress", kept
        assert (kept["task"]["claimed_by"], kept["task"]["expired_claims"]) == ("m2", 0)
        done = await clients["m3"].call(
            "update_task_status", {"task_id": "lease-a", "new_status": "completed"}
        )
        assert done["status"] == "success", done
    finally:
        for client in clients.values():
            await client.aclose()
    # The database's own rows: one lapse, two claims, finished by m3 (m1's late call changed nothing).
    row = cluster.store.query(
        "SELECT status, claimed_by, claim_count, expired_claims FROM tasks.tasks WHERE task_id = 'lease-a'"
    )
    assert row.split("|") == ["completed", "m3", "2", "1"], row


def test_the_shipped_nginx_conf_checks_as_a_user_who_cannot_write_run(nginx_binary: str) -> None:
    """``nginx -t -c FILE`` exactly as deploy/README.md runs it (no ``-g``, ``-p`` or ``-e``), by a
    user other than root: the file names its own pid file, so nginx never needs /run/nginx.pid."""
    folder = Path(tempfile.mkdtemp(prefix="hostd-nginx-check-"))  # not under root's 0700 pytest folder
    try:
        nginx_dir = folder / "state"
        nginx_dir.mkdir()
        values = {"NGINX_LISTEN": f"127.0.0.1:{free_port()}", "NGINX_DIR": str(nginx_dir)}
        values.update({f"HOSTD_PORT_{i}": str(free_port()) for i in (1, 2, 3)})
        conf = folder / "nginx.conf"
        conf.write_text(render_nginx_conf(values), encoding="utf-8")
        become: Callable[[], None] | None = None
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chmod(folder, 0o755)
            os.chown(nginx_dir, nobody.pw_uid, nobody.pw_gid)

            def become() -> None:
                os.setgid(nobody.pw_gid)
                os.setgroups([])
                os.setuid(nobody.pw_uid)

        checked = subprocess.run(
            [nginx_binary, "-t", "-c", str(conf)],
            capture_output=True,
            text=True,
            preexec_fn=become,
            timeout=30,
        )
        assert checked.returncode == 0, checked.stderr
        assert "test is successful" in checked.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_the_balancer_keeps_its_pid_file_in_its_own_folder(cluster: Cluster) -> None:
    """The running nginx wrote its pid where the file says (NGINX_DIR), not to /run/nginx.pid."""
    balancer = cluster.balancer
    assert balancer.process is not None
    assert (balancer.folder / "nginx.pid").read_text(encoding="utf-8").strip() == str(balancer.process.pid)


async def test_oauth_discovery_through_the_balancer(cluster: Cluster) -> None:
    """What an OAuth client does first, through nginx: a call without a token is refused with a
    challenge naming the metadata URL; that URL (and the bare well-known path) answers the
    protected resource metadata, no token needed."""
    import httpx2

    origin = cluster.balancer.url.removesuffix("/mcp")
    metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(
            cluster.balancer.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN},
        )
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{metadata_url}", scope="mcp:read mcp:write"'
        )
        expected = {
            "resource": cluster.balancer.url,
            "authorization_servers": [OAUTH_ISSUER],
            "scopes_supported": ["mcp:read", "mcp:write"],
            "bearer_methods_supported": ["header"],
            "resource_name": "hostd",
        }
        for url in (metadata_url, f"{origin}/.well-known/oauth-protected-resource"):
            answer = await http.get(url)
            assert answer.status_code == 200, (url, answer.status_code, answer.text)
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == expected


async def test_legacy_sse_through_the_balancer(cluster: Cluster) -> None:
    """The official SDK's legacy SSE client through nginx: the stream (GET /sse) and the posts
    (/messages/) reach the same replica, and each event arrives as it is sent (no buffering: the
    endpoint event is a few bytes, which a buffering proxy would hold back)."""
    from hostd_testing import envelope_of
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    origin = cluster.balancer.url.removesuffix("/mcp")
    headers = {"Authorization": f"Bearer {MEMBERS['m5']}"}
    with anyio.fail_after(60):
        async with (
            sse_client(f"{origin}/sse", headers=headers, timeout=10) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"create_memory", "get_next_task", "sequential_thinking"} <= names
            for _ in range(5):  # several posts on one session: each must reach the stream's replica
                created = envelope_of(
                    await session.call_tool("create_memory", {"uri": f"sse://note-{_}", "content": "via sse"})
                )
                assert created["status"] == "success", created
            read_back = envelope_of(await session.call_tool("read_memory", {"uri": "sse://note-4"}))
    assert read_back["status"] == "success", read_back
    assert read_back["content"] == "via sse", read_back


async def test_readiness_through_the_balancer(cluster: Cluster) -> None:
    """/readyz passes through to a replica (no token), and nginx's own /healthz stays its own."""
    import httpx2

    origin = cluster.balancer.url.removesuffix("/mcp")
    async with httpx2.AsyncClient(timeout=30) as http:
        ready = await http.get(f"{origin}/readyz")
        direct = await http.get(f"http://127.0.0.1:{cluster.replicas[0].port}/readyz")
        alive = await http.get(f"{origin}/healthz")
        metrics = await http.get(f"{origin}/metrics")
    assert (ready.status_code, ready.text) == (direct.status_code, direct.text) == (200, direct.text)
    assert (alive.status_code, alive.text) == (200, "ok")
    assert metrics.status_code == 404, "/metrics stays off the balancer unless the operator opts in"


def assert_applied_counts(ledger: Ledger, found: Counter[str], prefix: str) -> int:
    """Each acknowledged write is there; once when it never went unanswered; never more often than tried."""
    for mark in (m for m in ledger.acknowledged if prefix in m):
        count = found[mark]
        assert count >= 1, f"{mark} was acknowledged but is missing"
        if ledger.unanswered[mark] == 0:
            assert count == 1, f"{mark} was answered at its only attempt yet appears {count} times"
        if mark in ledger.unanswered_while_stopping and ledger.unanswered[mark] == 1:
            # Lost only while a replica was stopping gracefully: that attempt never ran (a request
            # reaching a closing idle connection), since calls in flight are finished, not cut.
            assert count == 1, f"{mark} was cut while a replica stopped gracefully and ran twice"
        assert count <= ledger.attempts[mark], f"{mark} appears more often than it was sent"
    assert set(found) <= set(ledger.attempts), "a write nobody sent"
    return sum(found.values())


async def check_memory(client: TeamClient, ledger: Ledger, uri: str) -> None:
    read = await client.call("read_memory", {"uri": uri})
    content = read["content"] if "content" in read else read["memory"]["content"]
    applied = assert_applied_counts(ledger, Counter(MARK.findall(content)), "-a")
    assert applied >= 2 * APPENDS_PER_WRITER
    versions = await client.call("get_memory_versions", {"uri": uri, "limit": 100})
    assert versions["current_version"] == versions["total"] == 1 + applied
    # As many versions as fit the answer's size budget, newest first: no gap among them, and as
    # many versions stored as the current number says.
    numbers = [version["version"] for version in versions["versions"]]
    assert len(numbers) >= 10
    assert numbers == list(range(1 + applied, 1 + applied - len(numbers), -1)), "a gap in the history"
    await check_authors(client, uri, 1 + applied)


async def check_authors(client: TeamClient, uri: str, current: int) -> None:
    """Each version after the first adds one member's mark, and its author is that member."""
    wrong: list[str] = []

    async def one(version: int) -> None:
        diff = await client.call("diff_versions", {"uri": uri, "version1": version - 1, "version2": version})
        assert diff["status"] == "success", diff
        assert not diff["truncated"] or len(diff["diff"]) < 400, "the diff itself was cut"
        lines = diff["diff"].splitlines()[2:]  # past the ---/+++ header
        added = Counter(MARK.findall("\n".join(line for line in lines if line.startswith("+"))))
        added -= Counter(MARK.findall("\n".join(line for line in lines if line.startswith("-"))))
        authors = {mark[1:].split("-")[0] for mark in added.elements()}
        if sum(added.values()) != 1 or authors != {diff["author2"]}:
            wrong.append(f"v{version}: adds {dict(added)}, author {diff['author2']}")

    limiter = anyio.CapacityLimiter(8)

    async def limited(version: int) -> None:
        async with limiter:
            await one(version)

    async with anyio.create_task_group() as group:
        for version in range(2, current + 1):
            group.start_soon(limited, version)
    assert not wrong, f"versions whose author is not the member who appended: {wrong[:5]}"


async def check_thoughts(client: TeamClient, ledger: Ledger, session_id: str) -> None:
    thoughts: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await client.call(
            "get_session", {"session_id": session_id, **({"cursor": cursor} if cursor else {})}
        )
        thoughts += page["thoughts"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    sequences = [thought["sequence"] for thought in thoughts]
    assert sequences == list(range(1, len(thoughts) + 1)), "a gap or a duplicate in the sequence"
    applied = assert_applied_counts(ledger, Counter(thought["content"] for thought in thoughts), "-t")
    wrong = [t for t in thoughts if t["by"] != t["content"][1:].split("-")[0]]
    assert not wrong, f"thoughts recorded with another member as their author: {wrong[:3]}"
    assert applied == len(thoughts) >= 2 * THOUGHTS_PER_THINKER


async def check_tasks(
    client: TeamClient, claims: dict[str, list[str]], tag: str, unanswered: Counter[str]
) -> None:
    acknowledged = {task: member for member, member_claims in claims.items() for task in member_claims}
    assert len(acknowledged) == sum(map(len, claims.values())), "a task was handed to two claims"
    ours: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        page = await client.call("list_tasks", {"limit": 100, **({"cursor": cursor} if cursor else {})})
        ours.update(
            {task["task_id"]: task for task in page["tasks"] if task["task_id"].startswith(f"{tag}-")}
        )
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(ours) == len(MEMBERS) * TASKS_PER_MEMBER
    assert {task["status"] for task in ours.values()} == {"in_progress"}, "a task left unclaimed"
    assert all(task["created_by"] == task_id.split("-")[1] for task_id, task in ours.items())
    assert set(acknowledged) <= set(ours)
    wrong = {t: (m, ours[t]["claimed_by"]) for t, m in acknowledged.items() if ours[t]["claimed_by"] != m}
    assert not wrong, f"claimed_by is not the member the claim was acknowledged to: {wrong}"
    unheard = {task_id: task["claimed_by"] for task_id, task in ours.items() if task_id not in acknowledged}
    assert len(unheard) <= sum(unanswered.values()), "claims went missing without a lost answer"
    for member, held in Counter(unheard.values()).items():
        assert held <= unanswered[member], (
            f"{member} holds {held} unheard-of claims, lost {unanswered[member]}"
        )


async def official_client_smoke(cluster: Cluster, era: str) -> None:
    """The official SDK client through the balancer: the handshake (2025) or none (2026)."""
    import httpx2
    from hostd_testing import envelope_of
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {MEMBERS['m1']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        mode = "legacy" if era == HANDSHAKE else era
        async with Client(
            streamable_http_client(cluster.balancer.url, http_client=http), mode=mode
        ) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"create_memory", "get_next_task", "sequential_thinking"} <= names
            stats = envelope_of(await client.call_tool("get_task_stats", {}))
            assert stats["status"] == "success"
