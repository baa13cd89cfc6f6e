"""hostd: a small MCP host that serves tools from pluggy plugins.

The public API for plugin authors is what this module exports, plus ``hostd.paging``; it is
typed (``py.typed``) and stable within a major version. Everything else is the host's own
business and may change.
"""

from hostd_db.spans import TraceSpan, trace_span
from hostd_errors import CodedError, Text

from hostd.context import (
    CopyReport,
    PluginContext,
    RegisterService,
    RegisterTool,
    SamplingResult,
    Services,
    ToolContext,
    ToolOutput,
)
from hostd.errors import ToolError
from hostd.hookspecs import hookimpl
from hostd.ids import ID_PATTERN
from hostd.prompts import PromptArgumentInfo, PromptImage, PromptInfo, PromptText, RegisterPrompts
from hostd.records import Record, RecordKind, RecordStore, pages
from hostd.resources import (
    RegisterResource,
    ResourceBlob,
    ResourceInfo,
    ResourceLink,
    ResourcePage,
    ResourceText,
)
from hostd.textlength import TextLength
from hostd.tools import ToolFunction
from hostd.web.api import (
    ActivityItem,
    Overview,
    OverviewCount,
    RegisterViews,
    ViewFile,
    ViewPage,
    ViewRedirect,
    ViewRequest,
)

__all__ = [
    "ID_PATTERN",
    "ActivityItem",
    "CodedError",
    "CopyReport",
    "Overview",
    "OverviewCount",
    "PluginContext",
    "PromptArgumentInfo",
    "PromptImage",
    "PromptInfo",
    "PromptText",
    "Record",
    "RecordKind",
    "RecordStore",
    "RegisterPrompts",
    "RegisterResource",
    "RegisterService",
    "RegisterTool",
    "RegisterViews",
    "ResourceBlob",
    "ResourceInfo",
    "ResourceLink",
    "ResourcePage",
    "ResourceText",
    "SamplingResult",
    "Services",
    "Text",
    "TextLength",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolOutput",
    "TraceSpan",
    "ViewFile",
    "ViewPage",
    "ViewRedirect",
    "ViewRequest",
    "hookimpl",
    "pages",
    "trace_span",
]
