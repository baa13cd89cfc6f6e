"""The ``hostd`` command: serve, inspect and call tools, check config, set up IDEs.

Exit codes: 0 ok, 1 a tool answered with an error (or stdout's reader went away), 2 usage or
config error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from hostd.errors import HostError

T = TypeVar("T")
logger = logging.getLogger(__name__)

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 1  # stdout's reader went away (``| head``): Python's convention for EPIPE
IDES = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 already; keep the message short
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"hostd: error: {message}\n")


def _common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--config", default=default, help="config file (else $HOSTD_CONFIG, else the user config dir)"
    )
    parser.add_argument(
        "--profile", default=default, help="profile to run (else $HOSTD_PROFILE, else 'default')"
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0 if top else argparse.SUPPRESS, help="log more to stderr"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hostd", description="Serve MCP tools from installed hostd plugins.")
    _common(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = commands.add_parser("serve", help="run the MCP server (stdio unless the profile says otherwise)")
    _common(serve, top=False)
    serve.add_argument(
        "--transport", choices=["stdio", "http", "sse"], help="override the profile's transport"
    )
    serve.add_argument("--host", help="bind address for http/sse")
    serve.add_argument("--port", type=int, help="port for http/sse")

    _common(commands.add_parser("plugins", help="list installed plugins"), top=False)

    tools = commands.add_parser("tools", help="list the tools the profile serves")
    _common(tools, top=False)
    tools.add_argument("--json", action="store_true", help="full tool definitions as JSON")

    call = commands.add_parser("call", help="run one tool in-process and print its envelope")
    _common(call, top=False)
    call.add_argument("tool")
    call.add_argument(
        "--arg", action="append", default=[], metavar="KEY=VALUE", help="one argument (repeatable)"
    )
    call.add_argument("--json", dest="json_args", metavar="OBJECT", help="all arguments as one JSON object")

    config = commands.add_parser("config", help="check or show the effective config")
    _common(config, top=False)
    config.add_argument("action", choices=["check", "show"])

    db = commands.add_parser("db", help="the team database (`storage` in the config)")
    _common(db, top=False)
    db_actions = db.add_subparsers(dest="db_action", required=True, parser_class=_Parser)
    migrate = db_actions.add_parser("migrate", help="apply each plugin's pending schema migrations")
    _common(migrate, top=False)
    migrate.add_argument(
        "--check", action="store_true", help="only report; exit 1 when a migration is pending"
    )

    copy = db_actions.add_parser(
        "copy", help="copy the local stores (SQLite files, JSON sessions) into the team database"
    )
    _common(copy, top=False)

    client = commands.add_parser("client-config", help="print what to paste into an IDE's MCP settings")
    _common(client, top=False)
    client.add_argument("ide", choices=IDES)
    return parser


def _setup_logging(verbosity: int) -> None:
    level = os.environ.get("HOSTD_LOG_LEVEL", "").upper() or (
        "DEBUG" if verbosity > 1 else "INFO" if verbosity else "WARNING"
    )
    logging.basicConfig(stream=sys.stderr, level=level, format="hostd %(levelname)s %(name)s: %(message)s")


def _make_host(args: argparse.Namespace) -> Any:
    from hostd.config import load_config
    from hostd.host import Host

    loaded = load_config(args.config, args.profile)
    return Host(loaded, cwd=Path.cwd())


def run_async(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run `function` on uvloop where it is installed (the default off Windows), else asyncio.

    uvloop makes each request's hand-offs between the event loop and worker threads cheaper;
    `HOSTD_EVENT_LOOP=asyncio` falls back to the standard loop.
    """
    import anyio

    choice = os.environ.get("HOSTD_EVENT_LOOP", "uvloop").strip().lower()
    if choice not in ("uvloop", "asyncio"):
        raise HostError(f"HOSTD_EVENT_LOOP must be 'uvloop' or 'asyncio', not {choice!r}")
    use_uvloop = False
    if choice == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            logger.debug("uvloop is not installed; serving on the standard asyncio loop")
        else:
            use_uvloop = True
    return anyio.run(function, *args, backend_options={"use_uvloop": use_uvloop})


def cmd_serve(args: argparse.Namespace) -> int:

    from hostd.health import PluginsStarted, host_readiness
    from hostd.server import build_server
    from hostd.transports import HttpPolicy, serve_http, serve_stdio

    host = _make_host(args)
    transport = host.loaded.profile.transport
    overrides = {k: v for k, v in (("type", args.transport), ("host", args.host), ("port", args.port)) if v}
    transport = transport.model_copy(update=overrides)
    policy = None
    if transport.type != "stdio":  # refuse unsafe binds and bad token files before starting anything
        policy = HttpPolicy(transport, host.language, known_profiles=host.loaded.config.profiles)
    server = build_server(host, transport)
    storage = host.loaded.config.storage
    if storage is not None:
        # A database that is down, too new, or (with migrate: false) behind stops start-up here, exit 2.
        _require_current(host.prepare_team_databases(migrate=storage.migrate))
    plugins = PluginsStarted()
    host.startup()
    plugins.started = True
    try:
        if policy is None:
            run_async(serve_stdio, server, host.language)
        else:
            run_async(serve_http, server, policy, host_readiness(host, plugins))
    except KeyboardInterrupt:
        pass
    finally:
        plugins.started = False
        host.shutdown()
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    from hostd.plugins import installed_plugins

    installed = installed_plugins()
    if not installed:
        print("no hostd plugins installed")
    for name, entry_point in sorted(installed.items()):
        dist = entry_point.dist
        label = f"{dist.name} {dist.version}" if dist is not None else entry_point.value
        print(f"{name:16} {label}")
    return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    from hostd.server import tool_definitions

    host = _make_host(args)
    if args.json:
        definitions = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tool_definitions(host)
        ]
        print(json.dumps(definitions, ensure_ascii=False, indent=2))
        return EXIT_OK
    for spec in host.tools.values():
        summary = spec.description.splitlines()[0]
        print(f"{spec.name:24} [{spec.plugin}] {summary}")
    return EXIT_OK


def _parse_call_arguments(args: argparse.Namespace, schema: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if args.json_args:
        try:
            arguments = json.loads(args.json_args)
        except json.JSONDecodeError as exc:
            raise HostError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise HostError("--json must be a JSON object")
    properties = schema.get("properties", {})
    for item in args.arg:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise HostError(f"--arg expects KEY=VALUE, got {item!r}")
        prop = properties.get(key, {})
        kinds = {prop.get("type")} | {option.get("type") for option in prop.get("anyOf", [])}
        if kinds & {"string"} and not kinds & {"integer", "number", "boolean", "array", "object"}:
            arguments[key] = raw
            continue
        try:
            arguments[key] = json.loads(raw)
        except json.JSONDecodeError:
            arguments[key] = raw
    return arguments


def cmd_call(args: argparse.Namespace) -> int:

    malformed = [item for item in args.arg if "=" not in item or item.startswith("=")]
    if malformed:
        raise HostError(f"--arg expects KEY=VALUE, got {malformed[0]!r}")
    host = _make_host(args)
    spec = host.tools.get(args.tool)
    arguments = _parse_call_arguments(args, spec.input_schema if spec else {})
    host.startup()
    try:
        envelope, is_error = run_async(host.call, args.tool, arguments)
    finally:
        host.shutdown()
    print(json.dumps(envelope, ensure_ascii=False, indent=2))
    return EXIT_TOOL_ERROR if is_error else EXIT_OK


def _schema_line(plugin: str, status: Any) -> str:
    if status.too_new:
        state = f"version {status.current} is newer than this hostd knows ({status.known}): upgrade hostd"
    elif status.pending:
        state = f"version {status.current} of {status.known}: {status.pending} migration(s) pending"
    else:
        state = f"version {status.current}: current"
    return f"{plugin}: {state}"


def _require_current(statuses: list[tuple[str, Any]]) -> None:
    behind = [_schema_line(name, status) for name, status in statuses if status.pending or status.too_new]
    if behind:
        summary = "; ".join(behind)
        raise HostError(f"team database schema is not current: {summary} (run `hostd db migrate`)")


def _copy_to_team_database(host: Any) -> int:
    """Migrate, then let each plugin copy its local store; conflicts are reported, never overwritten."""
    from hostd_db import describe_url

    host.prepare_team_databases(migrate=True)
    print(f"copying {host.loaded.data_dir} into {describe_url(host.loaded.database_url or '')}")
    reports = host.copy_to_team_database()
    conflicts = 0
    for plugin, report in reports:
        kinds = sorted(set(report.copied) | set(report.unchanged) | set(report.updated))
        counts = ", ".join(
            f"{kind}: {report.copied.get(kind, 0)} copied, "
            + (f"{report.updated[kind]} updated, " if report.updated.get(kind) else "")
            + f"{report.unchanged.get(kind, 0)} unchanged"
            for kind in kinds
        )
        # A plugin whose every record is in conflict has records: it copied nothing, it is not empty.
        print(f"{plugin}: {counts or ('nothing copied' if report.conflicts else 'nothing stored locally')}")
        for conflict in report.conflicts:
            print(f"{plugin}: CONFLICT {conflict}")
        conflicts += len(report.conflicts)
    if not reports:
        print("(no loaded plugin keeps a local store to copy)")
    if conflicts:
        print(
            f"{conflicts} conflict(s) left as they are in the team database: "
            "resolve them there, then copy again"
        )
    return EXIT_TOOL_ERROR if conflicts else EXIT_OK


def cmd_db(args: argparse.Namespace) -> int:
    host = _make_host(args)
    if host.loaded.config.storage is None:
        raise HostError("no team database: add `storage: {url_env: HOSTD_DATABASE_URL}` to the config")
    from hostd_db import describe_url

    if args.db_action == "copy":
        return _copy_to_team_database(host)
    statuses = host.prepare_team_databases(migrate=not args.check)
    print(f"database: {describe_url(host.loaded.database_url or '')}")
    for name, status in statuses:
        print(_schema_line(name, status))
    if not statuses:
        print("(no loaded plugin keeps tables in the team database)")
    pending = any(status.pending or status.too_new for _, status in statuses)
    return EXIT_TOOL_ERROR if args.check and pending else EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    from hostd.config import load_config
    from hostd.host import Host

    loaded = load_config(args.config, args.profile)
    if args.action == "check":
        names = (
            [loaded.profile_name] if args.profile else (list(loaded.config.profiles) or [loaded.profile_name])
        )
        for name in names:
            profile_loaded = load_config(args.config, name)
            host = Host(profile_loaded, cwd=Path.cwd())
            print(f"profile {name}: ok ({len(host.plugin_names)} plugins, {len(host.tools)} tools)")
        print(f"config: {loaded.source or '(none: built-in defaults)'}")
        if loaded.config.storage is None:
            print("storage: embedded (SQLite files and JSON sessions in the data folder)")
            return EXIT_OK
        from hostd_db import describe_url

        host = Host(loaded, cwd=Path.cwd())
        print(f"storage: team database {describe_url(loaded.database_url or '')}")
        statuses = host.prepare_team_databases(migrate=False)  # unreachable: HostError, exit 2
        for plugin, status in statuses:
            print(f"  {_schema_line(plugin, status)}")
        return EXIT_TOOL_ERROR if any(s.pending or s.too_new for _, s in statuses) else EXIT_OK
    import yaml

    shown = {
        "source": str(loaded.source) if loaded.source else None,
        "profile": loaded.profile_name,
        "data_dir": str(loaded.data_dir),
        "language": loaded.language,
        "allowed_roots": loaded.config.allowed_roots,
        "profile_config": loaded.profile.model_dump(mode="json"),
        "plugins": loaded.config.plugins,
    }
    print(yaml.safe_dump(shown, allow_unicode=True, sort_keys=False), end="")
    return EXIT_OK


def _command_path() -> list[str]:
    """The absolute command an IDE should launch: the ``hostd`` script, else ``python -m hostd``."""
    found = shutil.which("hostd")
    if found:
        return [str(Path(found).resolve())]
    script = Path(sys.argv[0])
    if script.name == "hostd" and script.exists():
        return [str(script.resolve())]
    return [sys.executable, "-m", "hostd"]


def cmd_client_config(args: argparse.Namespace) -> int:
    from hostd.config import load_config

    loaded = load_config(args.config, args.profile)
    command, *prefix_args = _command_path()
    serve_args = [*prefix_args, "serve"]
    if loaded.source is not None:
        serve_args += ["--config", str(loaded.source.resolve())]
    serve_args += ["--profile", loaded.profile_name]
    transport = loaded.profile.transport
    if transport.type != "stdio":
        url = f"http://{transport.host}:{transport.port}/mcp"
        entry: dict[str, Any] = {"url": url}
        if transport.token_env:
            entry["headers"] = {"Authorization": f"Bearer ${{{transport.token_env}}}"}
        stdio = False
    else:
        entry = {"command": command, "args": serve_args}
        stdio = True
    where = {
        "claude-desktop": "claude_desktop_config.json (Settings > Developer > Edit Config)",
        "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
        "windsurf": "~/.codeium/windsurf/mcp_config.json",
        "vscode": ".vscode/mcp.json in your workspace (or the user-level mcp.json)",
        "claude-code": ".mcp.json in your project, or run the command below",
    }[args.ide]
    if args.ide == "vscode":
        snippet: dict[str, Any] = {"servers": {"hostd": {"type": "stdio" if stdio else "http", **entry}}}
    elif args.ide == "windsurf" and not stdio:
        snippet = {
            "mcpServers": {
                "hostd": {"serverUrl": entry["url"], **{k: v for k, v in entry.items() if k != "url"}}
            }
        }
    else:
        snippet = {"mcpServers": {"hostd": entry}}
    print(f"# Paste into {where}:", file=sys.stderr)
    print(json.dumps(snippet, indent=2, ensure_ascii=False))
    if args.ide == "claude-code" and stdio:
        import shlex

        print("# or run:", file=sys.stderr)
        print("claude mcp add hostd -- " + shlex.join([command, *serve_args]), file=sys.stderr)
    return EXIT_OK


COMMANDS = {
    "serve": cmd_serve,
    "plugins": cmd_plugins,
    "tools": cmd_tools,
    "call": cmd_call,
    "config": cmd_config,
    "client-config": cmd_client_config,
    "db": cmd_db,
}


def _quiet_after_broken_pipe() -> int:
    """Point stdout at the null device so the interpreter's final flush cannot fail again.

    The reader (``| head``) has gone: as Python's documentation recommends for EPIPE on
    stdout, end with status 1 and no traceback.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return status
    except BrokenPipeError:
        return _quiet_after_broken_pipe()
    except HostError as exc:
        print(f"hostd: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
