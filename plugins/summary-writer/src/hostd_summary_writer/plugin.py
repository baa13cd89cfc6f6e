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
        read_only=False,
        destructive=True,
        idempotent=False,
        uses_roots=True,
    )
