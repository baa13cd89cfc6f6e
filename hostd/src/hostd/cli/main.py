"""The ``hostd`` command: serve, inspect and call tools, check config, set up IDEs, and the
commands plugins add (``hostd_register_commands``: ``hostd tasks export``), each one tool call.

Exit codes: 0 ok, 1 a tool answered with an error (or stdout's reader went away), 2 usage or
config error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hostd.cli.client_config import cmd_client_config
from hostd.core.errors import HostError
from hostd.core.runtime import (
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    require_current_schemas,
    run_async,
    schema_line,
)

if TYPE_CHECKING:
    from hostd.core.commands import CommandSpec
    from hostd.core.config import LoadedConfig

T = TypeVar("T")
logger = logging.getLogger(__name__)

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

    web = commands.add_parser("web", help="open the dashboard in a browser (serves it on 127.0.0.1)")
    _common(web, top=False)
    web.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    web.add_argument(
        "--no-browser", action="store_true", help="print the sign-in link, do not open a browser"
    )

    audit = commands.add_parser("audit", help="read the audit trail: who called which tool, when, outcome")
    _common(audit, top=False)
    audit.add_argument("--member", help="only this member's calls")
    audit.add_argument("--tool", help="only calls of this tool")
    audit.add_argument(
        "--since", help="only calls since: an ISO time (2026-11-27T08:00Z) or an age (30m, 2h, 7d)"
    )
    audit.add_argument("--limit", type=int, default=1000, help="the newest N records (default 1000)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")

    client = commands.add_parser("client-config", help="print what to paste into an IDE's MCP settings")
    _common(client, top=False)
    client.add_argument("ide", choices=IDES)
    client.add_argument(
        "--url",
        help="for an HTTP profile: the URL clients reach the server at (default: from allowed_hosts)",
    )
    return parser


def _setup_logging(verbosity: int) -> None:
    """stderr logging. By default hostd's own events (listening, reloaded, refused) show at INFO
    and everything else (libraries) from WARNING; ``-v`` shows every INFO line, ``-vv`` DEBUG,
    ``$HOSTD_LOG_LEVEL`` sets one level for all."""
    chosen = os.environ.get("HOSTD_LOG_LEVEL", "").upper() or (
        "DEBUG" if verbosity > 1 else "INFO" if verbosity else ""
    )
    level = chosen or "WARNING"
    stderr = logging.StreamHandler(sys.stderr)
    # The handler keeps the level too: a client that asks for debug log notifications lowers the
    # hostd loggers' level (hostd.protocol.client_log), which must not make stderr any louder.
    stderr.setLevel(chosen or "INFO")
    logging.basicConfig(level=level, format="hostd %(levelname)s %(name)s: %(message)s", handlers=[stderr])
    if not chosen:
        logging.getLogger("hostd").setLevel(logging.INFO)


def _make_host(args: argparse.Namespace) -> Any:
    from hostd.core.config import load_config
    from hostd.core.host import Host

    loaded = load_config(args.config, args.profile)
    return Host(loaded, cwd=Path.cwd())


def served_tool_names(args: argparse.Namespace, *built: Any) -> dict[str, set[str]]:
    """Each profile's served tool names (``built``: hosts already made for some profiles)."""
    from hostd.core.config import load_config
    from hostd.core.host import Host

    served = {host.loaded.profile_name: set(host.tools) for host in built}
    for name in built[0].loaded.config.profiles:
        if name not in served:
            served[name] = set(Host(load_config(args.config, name), cwd=Path.cwd()).tools)
    return served


def check_limits(args: argparse.Namespace, *built: Any) -> None:
    """A ``limits.tools`` entry that names no served tool stops ``serve`` and ``config check``."""
    from hostd.team.quotas import check_limit_tools

    limits = built[0].loaded.config.limits
    if limits is not None and limits.tools:
        check_limit_tools(limits, served_tool_names(args, *built))


def cmd_serve(args: argparse.Namespace) -> int:

    from hostd.core.environment import require_writable_data_dir
    from hostd.protocol.guard import HttpPolicy
    from hostd.protocol.http import serve_http
    from hostd.protocol.server import build_server
    from hostd.protocol.stdio import serve_stdio
    from hostd.protocol.subscriptions import run_with_changes
    from hostd.team.health import PluginsStarted, host_readiness

    host = _make_host(args)
    check_limits(args, host)
    require_writable_data_dir(host.loaded.data_dir)  # exit 3 with one line, before any tool fails on it
    transport = host.loaded.profile.transport
    overrides = {k: v for k, v in (("type", args.transport), ("host", args.host), ("port", args.port)) if v}
    transport = transport.model_copy(update=overrides)
    policy = None
    if transport.type != "stdio":  # refuse unsafe binds and bad token files before starting anything
        policy = HttpPolicy(transport, host.language, known_profiles=host.loaded.config.profiles)
    server = build_server(host, transport)
    dashboard = None
    if policy is not None and transport.dashboard:
        from hostd.web.serve import team_dashboard

        dashboard = team_dashboard(host, transport, policy)
    if policy is not None:
        from hostd.team.quotas import install_request_rate

        policy.pipeline = host.pipeline
        policy.request_rate = host.pipeline.request_rate = install_request_rate(host)
    if policy is not None and transport.metrics is not None and transport.metrics.enabled:
        from hostd.team.metrics import install_metrics

        policy.metrics = install_metrics(host)
    storage = host.loaded.config.storage
    if storage is not None:
        # A database that is down, too new, or (with migrate: false) behind stops start-up here, exit 2.
        require_current_schemas(host.prepare_team_databases(migrate=storage.migrate))
    from hostd.team.audit import install_audit

    trail = install_audit(host)
    from hostd.team.quotas import install_quotas

    quotas = install_quotas(host)
    from hostd.team.tracing import install_tracing

    tracing = install_tracing(host)
    plugins = PluginsStarted()
    host.startup()
    plugins.started = True
    try:
        if policy is None:
            grace = transport.shutdown_grace_seconds  # at end of input, for the requests read before it
            run_async(run_with_changes, host.changes, serve_stdio, server, host.language, grace)
        else:
            readiness = host_readiness(host, plugins)
            run_async(run_with_changes, host.changes, serve_http, server, policy, readiness, dashboard)
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:  # a start-up refusal raised inside the served task group
        refusals, rest = group.split(HostError)
        if refusals is None or rest is not None:
            raise
        first: BaseException = refusals
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    finally:
        plugins.started = False
        host.shutdown()
        if trail is not None:
            trail.close()
        if quotas is not None:
            quotas.close()
        if tracing is not None:
            tracing.shutdown()
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    from hostd.core.plugins import installed_plugins

    installed = installed_plugins()
    if not installed:
        print("no hostd plugins installed")
    for name, entry_point in sorted(installed.items()):
        dist = entry_point.dist
        label = f"{dist.name} {dist.version}" if dist is not None else entry_point.value
        print(f"{name:16} {label}")
    return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    from hostd.protocol.adapters import tool_definitions

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
        arguments[key] = _typed(raw, properties.get(key, {}))
    return arguments


def _typed(raw: str, prop: dict[str, Any]) -> Any:
    """A value typed on the command line, as the argument's schema types it: a string as it is,
    anything else as JSON (left a string when it is not JSON; the tool's validation names it)."""
    kinds = {prop.get("type")} | {option.get("type") for option in prop.get("anyOf", [])}
    if kinds & {"string"} and not kinds & {"integer", "number", "boolean", "array", "object"}:
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _run_tool(host: Any, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """One call through the host's call pipeline (access, quotas, audit, the envelope), in-process."""
    from hostd.team.audit import install_audit

    trail = install_audit(host)
    host.startup()
    try:
        answer: tuple[dict[str, Any], bool] = run_async(host.call, tool, arguments)
        return answer
    finally:
        host.shutdown()
        if trail is not None:
            trail.close()


def cmd_call(args: argparse.Namespace) -> int:

    malformed = [item for item in args.arg if "=" not in item or item.startswith("=")]
    if malformed:
        raise HostError(f"--arg expects KEY=VALUE, got {malformed[0]!r}")
    host = _make_host(args)
    spec = host.tools.get(args.tool)
    arguments = _parse_call_arguments(args, spec.input_schema if spec else {})
    envelope, is_error = _run_tool(host, args.tool, arguments)
    print(json.dumps(envelope, ensure_ascii=False, indent=2))
    return EXIT_TOOL_ERROR if is_error else EXIT_OK


# --- the commands plugins add (hostd_register_commands) ----------------------------------------


def _command_word(argv: list[str]) -> tuple[argparse.Namespace, str | None]:
    """``--config``, ``--profile`` and ``-v`` wherever they stand, and the command's first word."""
    early = argparse.ArgumentParser(add_help=False)
    _common(early, top=True)
    known, rest = early.parse_known_args(argv)
    return known, next((item for item in rest if not item.startswith("-")), None)


def _enum(prop: dict[str, Any]) -> list[Any] | None:
    for option in [prop, *prop.get("anyOf", []), prop.get("items", {})]:
        if isinstance(option.get("enum"), list):
            return list(option["enum"])
    return None


def add_plugin_commands(parser: argparse.ArgumentParser, host: Any) -> None:
    """``hostd GROUP NAME`` for each command the profile's plugins registered."""
    words = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    groups: dict[str, Any] = {}
    for spec in host.commands.values():
        if spec.group in COMMANDS:
            raise HostError(f"plugin {spec.plugin!r}: the command group {spec.group!r} is a hostd command")
        if spec.group not in groups:
            group = words.add_parser(spec.group, help=f"commands of the {spec.plugin} plugin")
            _common(group, top=False)
            groups[spec.group] = group.add_subparsers(
                dest="plugin_command", required=True, parser_class=_Parser
            )
        command = groups[spec.group].add_parser(spec.name, help=spec.help, description=spec.help)
        _common(command, top=False)
        properties = host.tools[spec.tool].input_schema.get("properties", {})
        for option in spec.options:
            settings: dict[str, Any] = {"help": option.help}
            if option.switch:
                settings["action"] = "store_true"
            else:
                settings["choices"] = _enum(properties.get(option.argument, {}))
                settings["action"] = "append" if option.repeat else "store"
                if settings["choices"] is None:
                    settings["metavar"] = option.flags[-1].lstrip("-").upper()
            if option.flags[0].startswith("-"):
                command.add_argument(*option.flags, dest=option.argument, **settings)
            else:
                settings.setdefault("metavar", option.flags[0].upper())
                command.add_argument(option.argument, **settings)
        command.add_argument(
            "--json", dest="whole_envelope", action="store_true", help="print the whole envelope"
        )
        command.set_defaults(command_spec=spec)


def cmd_plugin_command(args: argparse.Namespace, host: Any) -> int:
    """Run the command's tool through the pipeline; print what the command prints (the message
    by default), or the refusal on stderr with exit 1."""
    spec: CommandSpec = args.command_spec
    properties = host.tools[spec.tool].input_schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for option in spec.options:
        value = getattr(args, option.argument, None)
        if value is None or value is False:
            continue
        prop = properties.get(option.argument, {})
        if option.repeat:
            kinds = [prop, *prop.get("anyOf", [])]
            items: dict[str, Any] = next((kind["items"] for kind in kinds if "items" in kind), {})
            arguments[option.argument] = [_typed(item, items) for item in value]
        else:
            arguments[option.argument] = value if option.switch else _typed(value, prop)
    envelope, is_error = _run_tool(host, spec.tool, arguments)
    if args.whole_envelope:
        print(json.dumps(envelope, ensure_ascii=False, indent=2))
    elif is_error:
        error = envelope.get("error", {})
        print(f"hostd {spec.group} {spec.name}: {error.get('code')}: {error.get('message')}", file=sys.stderr)
        if error.get("hint"):
            print(f"hint: {error['hint']}", file=sys.stderr)
    else:
        shown = next((envelope[field] for field in spec.prints if envelope.get(field) is not None), None)
        if shown is None:
            shown = envelope.get("message", "")
        print(shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False, indent=2))
    return EXIT_TOOL_ERROR if is_error else EXIT_OK


def _copy_to_team_database(host: Any) -> int:
    """Migrate, then let each plugin copy its local store; conflicts are reported, never overwritten."""
    from hostd_db import describe_url

    host.prepare_team_databases(migrate=True)
    print(f"copying {host.loaded.data_dir} into {describe_url(host.loaded.database_url or '')}")
    reports = host.copy_to_team_database(
        progress=lambda plugin, read: print(f"{plugin}: {read} records read", file=sys.stderr, flush=True)
    )
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
        for renumbered in report.renumbered:
            print(f"{plugin}: RENUMBERED {renumbered}")
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
        print(schema_line(name, status))
    if not statuses:
        print("(no loaded plugin keeps tables in the team database)")
    pending = any(status.pending or status.too_new for _, status in statuses)
    return EXIT_TOOL_ERROR if args.check and pending else EXIT_OK


def _environment_findings(loaded: LoadedConfig) -> tuple[list[str], list[str]]:
    """What start-up of one profile will need from the machine: (problems, warnings), each
    beginning with the config key to change."""
    from hostd.core.environment import identity_provider_warning, port_problem, readable_file_problem

    problems: list[str] = []
    warnings: list[str] = []
    transport = loaded.profile.transport
    if transport.type == "stdio":
        return problems, warnings
    key = f"profiles.{loaded.profile_name}.transport"
    for problem in (
        port_problem(transport.host, transport.port, f"{key}.port"),
        port_problem(transport.metrics.host, transport.metrics.port, f"{key}.metrics.port")
        if transport.metrics is not None and transport.metrics.enabled and transport.metrics.port is not None
        else None,
        readable_file_problem(Path(transport.tokens_file).expanduser(), f"{key}.tokens_file")
        if transport.tokens_file
        else None,
        readable_file_problem(Path(transport.oauth.members_file).expanduser(), f"{key}.oauth.members_file")
        if transport.oauth is not None and transport.oauth.members_file
        else None,
    ):
        if problem is not None:
            problems.append(problem)
    if transport.oauth is not None:
        timeout = min(transport.oauth.http_timeout_seconds, 3.0)
        warning = identity_provider_warning(transport.oauth.issuer, f"{key}.oauth.issuer", timeout)
        if warning is not None:
            warnings.append(warning)
    return problems, warnings


def _check_config(args: argparse.Namespace) -> int:
    """``config check``: every profile (or the one named), then what start-up needs from the
    machine; each problem named by its config key. Exit 2 on a problem, 1 on a schema behind."""
    from hostd.core.config import load_config, load_every_profile
    from hostd.core.environment import data_dir_check
    from hostd.core.host import Host

    if args.profile or os.environ.get("HOSTD_PROFILE"):
        profiles = [load_config(args.config, args.profile)]
    else:
        profiles = load_every_profile(args.config)
    hosts = {loaded.profile_name: Host(loaded, cwd=Path.cwd()) for loaded in profiles}
    check_limits(args, *hosts.values())
    for name, host in hosts.items():
        print(f"profile {name}: ok ({len(host.plugin_names)} plugins, {len(host.tools)} tools)")
    loaded = profiles[0]
    print(f"config: {loaded.source or '(none: built-in defaults)'}")
    problems: list[str] = []
    warnings: list[str] = []
    data_dir = data_dir_check(loaded.data_dir)
    if data_dir is not None:
        problems.append(data_dir)
    for each in profiles:
        found, warned = _environment_findings(each)
        problems += found
        warnings += warned
    status = EXIT_OK
    if loaded.config.storage is None:
        print(f"storage: embedded (SQLite files and JSON sessions in the data folder {loaded.data_dir})")
    else:
        from hostd_db import describe_url

        host = next(iter(hosts.values()))
        try:
            print(f"storage: team database {describe_url(loaded.database_url or '')}")
            statuses = host.prepare_team_databases(migrate=False)
        except HostError as exc:
            problems.append(f"storage.url_env: {exc}")
        else:
            for plugin, schema in statuses:
                print(f"  {schema_line(plugin, schema)}")
            if any(s.pending or s.too_new for _, s in statuses):
                status = EXIT_TOOL_ERROR
    for warning in warnings:
        print(f"warning: {warning}")
    for problem in problems:
        print(f"problem: {problem}")
    return EXIT_USAGE if problems else status


def cmd_config(args: argparse.Namespace) -> int:
    from hostd.core.config import load_config

    if args.action == "check":
        return _check_config(args)
    loaded = load_config(args.config, args.profile)
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


def cmd_web(args: argparse.Namespace) -> int:
    """``hostd web``: the dashboard on 127.0.0.1 for this config and profile (see hostd.web.serve)."""
    from hostd.web.serve import serve_local_dashboard

    return serve_local_dashboard(_make_host(args), port=args.port, open_browser=not args.no_browser)


def _since(text: str | None) -> Any:
    """``--since``: an ISO time (UTC unless it says otherwise) or an age such as ``30m``, ``2h``, ``7d``."""
    import datetime
    import re

    if text is None:
        return None
    now = datetime.datetime.now(datetime.UTC)
    age = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text.strip())
    if age:
        seconds = float(age.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[age.group(2)]
        return now - datetime.timedelta(seconds=seconds)
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise HostError(
            f"--since expects an ISO time (2026-11-27T08:00Z) or an age (30m, 2h, 7d), got {text!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def cmd_audit(args: argparse.Namespace) -> int:
    from hostd.team.audit import AuditQuery, read_trail

    query = AuditQuery(member=args.member, tool=args.tool, since=_since(args.since), limit=max(1, args.limit))
    host = _make_host(args)
    row = "{:<29}  {:<16} {:<7} {:<24} {:<18} {:>12}  {:<24} {}"
    if not args.json:
        print(
            row.format(
                "time", "member", "surface", "tool", "outcome", "duration", "replica", "arguments_hmac"
            )
        )
    for entry in read_trail(host, query):
        if args.json:
            print(json.dumps(entry, ensure_ascii=False))
            continue
        digest = str(entry.get("arguments_hmac") or entry.get("arguments_sha256") or "")  # older files
        print(
            row.format(
                entry["time"],
                entry["member"],
                entry.get("surface", "mcp"),
                entry["tool"],
                entry["outcome"],
                f"{entry['duration_ms']:.3f} ms",
                entry["replica"],
                digest[:16],
            )
        )
    return EXIT_OK


COMMANDS = {
    "serve": cmd_serve,
    "plugins": cmd_plugins,
    "tools": cmd_tools,
    "call": cmd_call,
    "config": cmd_config,
    "client-config": cmd_client_config,
    "db": cmd_db,
    "web": cmd_web,
    "audit": cmd_audit,
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
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    early, word = _command_word(argv)
    host = None
    if word is not None and word not in COMMANDS:  # a plugin's command: the profile's plugins say which
        _setup_logging(early.verbose)
        try:
            host = _make_host(early)
            add_plugin_commands(parser, host)
        except HostError as exc:
            print(f"hostd: {exc}", file=sys.stderr)
            return exc.exit_code
    args = parser.parse_args(argv)
    if host is None:
        _setup_logging(args.verbose)
    try:
        status = cmd_plugin_command(args, host) if host is not None else COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return status
    except BrokenPipeError:
        return _quiet_after_broken_pipe()
    except HostError as exc:
        print(f"hostd: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
