"""Test helpers for hostd plugins: real MCP clients against in-memory and real servers."""

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
    "FuzzReport",
    "HttpServer",
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
