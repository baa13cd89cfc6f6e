"""Test helpers for hostd plugins: real MCP clients against in-memory and real servers.

A plugin's tests import ``hostd`` (its public API), ``hostd_testing`` and their own plugin,
never the host's internals, and take the kit from here, never from its submodules: ``__all__``
below is the surface plugins use (ruff's TID251 holds them to both). The official MCP client's types
they need come from here: ``Client`` (what ``connect``, ``in_memory_client`` and
``served_client`` hand out), ``MCPError`` (a JSON-RPC error answer) and
``StdioServerParameters`` (to start another MCP server to compare with). The matchers for the
parts of an answer that vary are ``dirty_equals``' (a dependency of the kit), imported from
``dirty_equals`` itself: the kit has none of its own and re-exports none.
"""

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from hostd_testing.backends import TEAM_DATABASE_ENV, backend_config
from hostd_testing.browser import (
    CHROMIUM,
    DESKTOP,
    PHONE,
    Escapes,
    chromium,
    focus_is_visible,
    focus_walk,
    require_or_skip,
    screenshot_dir,
    served,
    signed_in,
)
from hostd_testing.calls import (
    Envelope,
    call,
    envelope_error,
    envelope_ok,
    error_code,
    fails,
    ok,
)
from hostd_testing.clients import (
    HttpServer,
    envelope_of,
    free_port,
    in_memory_client,
    prompt_text,
    root_for,
    served_client,
    write_config,
)
from hostd_testing.connecting import Connect
from hostd_testing.fake_install import install_plugin_source, pythonpath_with
from hostd_testing.fuzz import FuzzReport, fuzz_tools
from hostd_testing.hosts import HostError, PluginHost, local_member, make_host, shared_lock_dir, start_host
from hostd_testing.markers import mark_external
from hostd_testing.npm import NPM_HOME, inspector_cli, npm_installed
from hostd_testing.proxy import VIA_NAME, Tinyproxy, self_signed_certificate, tinyproxy
from hostd_testing.raw_stdio import handshake, raw_stdio_server, tools_call
from hostd_testing.schemas import ReleasedSqliteMigration, check_schema_parity, released_sqlite_file
from hostd_testing.suites import check_paging, check_team_database, run_hostd
from hostd_testing.symlink_swap import swapping

__all__ = [
    "CHROMIUM",
    "DESKTOP",
    "NPM_HOME",
    "PHONE",
    "TEAM_DATABASE_ENV",
    "VIA_NAME",
    "Client",
    "Connect",
    "Envelope",
    "Escapes",
    "FuzzReport",
    "HostError",
    "HttpServer",
    "MCPError",
    "PluginHost",
    "ReleasedSqliteMigration",
    "StdioServerParameters",
    "Tinyproxy",
    "backend_config",
    "call",
    "check_paging",
    "check_schema_parity",
    "check_team_database",
    "chromium",
    "envelope_error",
    "envelope_of",
    "envelope_ok",
    "error_code",
    "fails",
    "focus_is_visible",
    "focus_walk",
    "free_port",
    "fuzz_tools",
    "handshake",
    "in_memory_client",
    "inspector_cli",
    "install_plugin_source",
    "local_member",
    "make_host",
    "mark_external",
    "npm_installed",
    "ok",
    "prompt_text",
    "pythonpath_with",
    "raw_stdio_server",
    "released_sqlite_file",
    "require_or_skip",
    "root_for",
    "run_hostd",
    "screenshot_dir",
    "self_signed_certificate",
    "served",
    "served_client",
    "shared_lock_dir",
    "signed_in",
    "start_host",
    "swapping",
    "tinyproxy",
    "tools_call",
    "write_config",
]
