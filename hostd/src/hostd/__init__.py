"""hostd: a small MCP host that serves tools from pluggy plugins.

The public API for plugin authors is what this module exports; everything else is the
host's own business and may change.
"""

from hostd.context import CopyReport, PluginContext, SamplingResult, Services, ToolContext, ToolOutput
from hostd.errors import HostError, ToolError
from hostd.hookspecs import hookimpl

__all__ = [
    "CopyReport",
    "HostError",
    "PluginContext",
    "SamplingResult",
    "Services",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "hookimpl",
]
