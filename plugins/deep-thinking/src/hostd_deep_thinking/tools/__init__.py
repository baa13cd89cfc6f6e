"""The deep-thinking tools, by area: ``thinking`` (sequential_thinking), ``sessions`` (create, show,
list, delete, restore, status, resume), ``templates``, ``export_import`` (export, import,
diagrams), ``search`` and ``summary``; ``common`` holds what they share.

Each function is a tool as the host sees it: typed parameters with descriptions, a ``*Output``
return model, ``ToolError`` (raised here or by the store) for what the model can correct.
"""

from hostd_deep_thinking.tools.export_import import (
    MAX_IMPORT_CHARS,
    export_session,
    import_session,
    visualize_session,
)
from hostd_deep_thinking.tools.search import search_thoughts
from hostd_deep_thinking.tools.sessions import (
    create_session,
    delete_session,
    get_session,
    list_sessions,
    restore_session,
    resume_session,
    update_session_status,
)
from hostd_deep_thinking.tools.summary import summarize_session
from hostd_deep_thinking.tools.templates import list_templates
from hostd_deep_thinking.tools.thinking import sequential_thinking

__all__ = [
    "MAX_IMPORT_CHARS",
    "create_session",
    "delete_session",
    "export_session",
    "get_session",
    "import_session",
    "list_sessions",
    "list_templates",
    "restore_session",
    "resume_session",
    "search_thoughts",
    "sequential_thinking",
    "summarize_session",
    "update_session_status",
    "visualize_session",
]
