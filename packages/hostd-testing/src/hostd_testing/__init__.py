"""Test helpers for hostd plugins: real MCP clients against in-memory and real servers.

A plugin's tests import ``hostd`` (its public API), ``hostd_testing`` and their own plugin,
never the host's internals (ruff's TID251 holds them to it). The official MCP client's types
they need come from here: ``Client`` (what ``connect``, ``in_memory_client`` and
``served_client`` hand out), ``MCPError`` (a JSON-RPC error answer) and
``StdioServerParameters`` (to start another MCP server to compare with).
"""

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from hostd_testing.clients import (
    HttpServer,
    envelope_of,
    in_memory_client,
    prompt_text,
    root_for,
    served_client,
    write_config,
)
from hostd_testing.fake_install import install_plugin_source, pythonpath_with
from hostd_testing.fuzz import FuzzReport, fuzz_tools

__all__ = [
    "Client",
    "FuzzReport",
    "HttpServer",
    "MCPError",
    "StdioServerParameters",
    "envelope_of",
    "fuzz_tools",
    "in_memory_client",
    "install_plugin_source",
    "prompt_text",
    "pythonpath_with",
    "root_for",
    "served_client",
    "write_config",
]
