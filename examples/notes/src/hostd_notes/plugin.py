"""hostd example plugin ``notes``: add_note (write) and list_notes (read), kept in one table.

The host opens the table on the first ``ctx.database()``: the SQLite file ``notes.db`` in the
plugin's data folder, or with ``storage`` the plugin's schema in the team database.
"""

from __future__ import annotations

from hostd_db import Schema

from hostd import RegisterTool, hookimpl
from hostd_notes import tools

#: The plugin's icon, served inline once on its first tool (a folded sheet).
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" '
    'stroke-width="2"><path d="M5 3h10l4 4v14H5z"/><path d="M15 3v4h4M8 12h8M8 16h6"/></svg>'
)


@hookimpl
def hostd_register_tools(register: RegisterTool) -> None:
    register(tools.add_note, title="Add note", access="write", destructive=False, idempotent=False)
    register(tools.list_notes, title="List notes", access="read")


@hookimpl
def hostd_database_schema() -> Schema:
    from hostd_notes.store.schema import schema

    return schema()


@hookimpl
def hostd_icon() -> str:
    return ICON
