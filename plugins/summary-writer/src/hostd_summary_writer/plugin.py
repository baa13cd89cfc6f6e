"""The hookimpls: the settings model and the one tool, ``update_summary``."""

from __future__ import annotations

from hostd import PluginContext, RegisterTool, hookimpl
from hostd_summary_writer.models import Settings
from hostd_summary_writer.tools import update_summary


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    # Overwrite replaces a file and every append adds a new section: destructive, not idempotent.
    register(
        update_summary,
        title="Update summary file",
        tier="core",
        access="write",
        destructive=True,
        idempotent=False,
    )


#: The plugin's icon (a page with lines of text): the host serves it inline on each of its tools.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#5b6770"/>'
    '<path d="M9 9h14M9 14h14M9 19h14M9 24h8" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/>'
    "</svg>"
)


@hookimpl
def hostd_icon() -> str:
    return ICON
