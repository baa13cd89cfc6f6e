"""Registering the memory tools stays cheap: the store, SQLite and the search code load on first use."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys, typing
from hostd_memory.plugin import hostd_register_tools, hostd_settings_model

functions = []
hostd_register_tools(lambda function, **options: functions.append(function), context=None)
hints = {f.__name__: sorted(typing.get_type_hints(f, include_extras=True)) for f in functions}
hostd_settings_model()
lazy = ["sqlite3", "difflib", "hostd_memory.store", "hostd_memory.search", "hostd_memory.transfer"]
print(json.dumps({"tools": len(functions), "hints": hints, "loaded": [m for m in lazy if m in sys.modules]}))
"""


def test_registering_the_tools_loads_no_store_sqlite_or_search_code() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tools"] == 18
    assert all("return" in names for names in report["hints"].values())  # answer models resolve
    assert report["hints"]["search_memory"] == [
        "author",
        "created_after",
        "created_before",
        "ctx",
        "cursor",
        "domain",
        "limit",
        "priority_max",
        "priority_min",
        "query",
        "return",
        "tags",
        "updated_after",
        "updated_before",
    ]
    assert report["loaded"] == []
