"""The 18 memory tools, one module per area; ``plugin.py`` registers them.

``arguments`` holds the argument types and the checks the schema cannot make, ``answers`` the
shaping of rows into answers within the answer budget; ``reading``, ``writing``, ``searching``,
``linking``, ``versions`` and ``import_export`` hold the tools. Each tool checks its arguments,
asks the store (``store.memory_store``) and shapes the answer; what the store refuses arrives as a
``ToolError`` already, and every message is a ``Text`` the host renders in the server's language.

The host imports these modules at start-up to register the tools, so they import only what the
tools' signatures need (pydantic, the answer models, the host's API): the store, SQLite, the
search code and ``difflib`` are imported when a tool first runs.
"""
