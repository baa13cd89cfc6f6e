"""``hostd client-config IDE``: the snippet to paste into an IDE's MCP settings, for the profile
named for the IDE when there is one, over stdio or the profile's HTTP transport."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostd.core.errors import HostError
from hostd.core.runtime import (
    EXIT_OK,
)

if TYPE_CHECKING:
    from hostd.core.config import LoadedConfig, TransportConfig


def _command_path() -> list[str]:
    """The absolute command an IDE should launch: the ``hostd`` script, else ``python -m hostd``."""
    found = shutil.which("hostd")
    if found:
        return [str(Path(found).resolve())]
    script = Path(sys.argv[0])
    if script.name == "hostd" and script.exists():
        return [str(script.resolve())]
    return [sys.executable, "-m", "hostd"]


CLIENT_CONFIG_FILES = {
    "claude-desktop": "claude_desktop_config.json (Settings > Developer > Edit Config)",
    "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
    "windsurf": "~/.codeium/windsurf/mcp_config.json",
    "vscode": ".vscode/mcp.json in your workspace (or the user-level mcp.json)",
    "claude-code": ".mcp.json in your project",
}
#: The environment variable an IDE reads the token from when the profile names none (a tokens file).
DEFAULT_TOKEN_ENV = "HOSTD_TOKEN"
VSCODE_TOKEN_INPUT = "hostd-token"


def client_url(transport: TransportConfig, given: str | None) -> str:
    """The URL a client reaches the server at: ``--url`` as given, else the first ``allowed_hosts``
    entry without a wildcard (the Host the server accepts), else the loopback bind address.

    The bind address itself (``0.0.0.0``) is no address a client can reach, and the Host check
    would refuse it anyway.
    """
    if given is not None:
        if not given.startswith(("http://", "https://")):
            raise HostError(f"--url must be a whole URL starting with http:// or https:// (got {given!r})")
        return given
    path = "/sse" if transport.type == "sse" else "/mcp"
    for host in transport.allowed_hosts:
        if "*" not in host:
            return f"http://{host}{path}"
    bind = transport.host
    if bind in ("0.0.0.0", ""):
        bind = "127.0.0.1"
    elif bind == "::":
        bind = "::1"
    if ":" in bind:
        bind = f"[{bind}]"
    return f"http://{bind}:{transport.port}{path}"


def _http_snippet(ide: str, url: str, token_env: str | None) -> tuple[dict[str, Any], str | None]:
    """The IDE's entry for an HTTP server, the token referred to the way that IDE documents it
    (never its value), and the ``claude mcp add`` command for Claude Code."""

    def auth(reference: str) -> dict[str, Any]:
        return {"headers": {"Authorization": f"Bearer {reference}"}} if token_env else {}

    if ide == "claude-desktop":
        raise HostError(
            "Claude Desktop reads only stdio servers from claude_desktop_config.json; it connects to "
            "remote servers through Settings > Connectors, which cannot send a bearer token. Give "
            "Claude Desktop a stdio profile (transport: {type: stdio}) and run client-config with it."
        )
    if ide == "vscode":  # an input VS Code prompts for once and keeps in its secret storage
        snippet: dict[str, Any] = {
            "servers": {"hostd": {"type": "http", "url": url, **auth("${input:" + VSCODE_TOKEN_INPUT + "}")}}
        }
        if token_env:
            snippet = {
                "inputs": [
                    {
                        "type": "promptString",
                        "id": VSCODE_TOKEN_INPUT,
                        "description": f"hostd access token (the value of ${token_env})",
                        "password": True,
                    }
                ],
                **snippet,
            }
        return snippet, None
    if ide == "windsurf":
        return {"mcpServers": {"hostd": {"serverUrl": url, **auth(f"${{env:{token_env}}}")}}}, None
    if ide == "cursor":
        return {"mcpServers": {"hostd": {"url": url, **auth(f"${{env:{token_env}}}")}}}, None
    import shlex

    # Claude Code expands ${NAME} in .mcp.json; the header is quoted so the shell leaves it alone.
    command = ["claude", "mcp", "add", "--transport", "http", "--scope", "project", "hostd", url]
    if token_env:
        command += ["--header", f"Authorization: Bearer ${{{token_env}}}"]
    entry = {"type": "http", "url": url, **auth(f"${{{token_env}}}")}
    return {"mcpServers": {"hostd": entry}}, shlex.join(command)


def cmd_client_config(args: argparse.Namespace) -> int:
    from hostd.core.config import load_config

    loaded = load_config(args.config, args.profile, preferred=args.ide)  # the IDE's own profile first
    transport = loaded.profile.transport
    if transport.type != "stdio":
        token_env = transport.token_env or (DEFAULT_TOKEN_ENV if transport.tokens_file else None)
        snippet, run = _http_snippet(args.ide, client_url(transport, args.url), token_env)
        if token_env:
            print(
                f"# The token is read from ${token_env} (or asked for); it is not written here.",
                file=sys.stderr,
            )
    else:
        if args.url is not None:
            raise HostError(f"--url is for HTTP profiles; profile {loaded.profile_name!r} serves stdio")
        snippet, run = _stdio_snippet(args.ide, loaded)
    print(f"# Paste into {CLIENT_CONFIG_FILES[args.ide]}:", file=sys.stderr)
    print(json.dumps(snippet, indent=2, ensure_ascii=False))
    if run:
        print("# or run:", file=sys.stderr)
        print(run, file=sys.stderr)
    return EXIT_OK


def _stdio_snippet(ide: str, loaded: LoadedConfig) -> tuple[dict[str, Any], str | None]:
    """The IDE's entry that starts ``hostd serve`` over stdio (and Claude Code's command for it)."""
    command, *prefix_args = _command_path()
    serve_args = [*prefix_args, "serve"]
    if loaded.source is not None:
        serve_args += ["--config", str(loaded.source.resolve())]
    serve_args += ["--profile", loaded.profile_name]
    entry: dict[str, Any] = {"command": command, "args": serve_args}
    if ide == "vscode":
        return {"servers": {"hostd": {"type": "stdio", **entry}}}, None
    run = None
    if ide == "claude-code":
        import shlex

        run = "claude mcp add hostd -- " + shlex.join([command, *serve_args])
    return {"mcpServers": {"hostd": entry}}, run
