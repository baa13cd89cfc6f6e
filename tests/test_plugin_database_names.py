"""Plugins reach their tables only through hostd_db's public names (``Database`` from the host or
``open_database``, ``Connection``, ``Schema``, ...), never the engines behind ``Database``: a write
that went around ``Database.write`` skipped its busy and retry handling (issue 37)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hostd_db

ROOT = Path(__file__).resolve().parents[1]
#: The engines behind ``Database``: no longer public names of hostd_db, and never named in a plugin.
ENGINES = frozenset({"SqliteBackend", "PostgresBackend", "SqliteDatabase", "QmarkConnection"})


def plugin_files() -> list[Path]:
    """Every Python file of every plugin, its sources and its tests."""
    return sorted(
        path for folder in ("src", "tests") for path in (ROOT / "plugins").glob(f"*/{folder}/**/*.py")
    )


def hostd_db_imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) of every import of hostd_db or a name from it, as ``module.name``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hostd_db":
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "hostd_db":
                    yield node.lineno, alias.name


def refused(source: str) -> list[str]:
    """The imports a plugin may not make: a hostd_db submodule, a name outside ``hostd_db.__all__``,
    an engine; and an engine named anywhere (an attribute reached some other way)."""
    found = []
    public = set(hostd_db.__all__)
    for line, what in hostd_db_imports(source):
        module, _, name = what.rpartition(".")
        if module != "hostd_db" or name not in public or name in ENGINES:
            found.append(f"{line}: import {what}")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in ENGINES:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in ENGINES:
            found.append(f"{node.lineno}: {node.attr}")
    return found


def test_no_plugin_imports_an_engine_or_a_submodule_of_hostd_db() -> None:
    files = plugin_files()
    assert len(files) > 100  # the scan sees the plugins' sources and tests
    found = {
        str(path.relative_to(ROOT)): problems
        for path in files
        if (problems := refused(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_engines_are_not_public_names_of_hostd_db() -> None:
    assert sorted(ENGINES & set(hostd_db.__all__)) == []
    assert sorted(name for name in ENGINES if hasattr(hostd_db, name)) == []


def test_the_scan_refuses_what_a_plugin_once_imported() -> None:
    """The check bites: the imports plugins made before issue 37 are each refused."""
    before = (
        "from hostd_db import Database, PostgresBackend, SqliteBackend\n"
        "from hostd_db.pgtext import QmarkConnection\n"
        "from hostd_db.schema import Operation\n"
        "import hostd_db.database\n"
        "def f(db):\n"
        "    return db.database.SqliteDatabase\n"
    )
    assert refused(before) == [
        "1: import hostd_db.PostgresBackend",
        "1: import hostd_db.SqliteBackend",
        "2: import hostd_db.pgtext.QmarkConnection",
        "3: import hostd_db.schema.Operation",
        "4: import hostd_db.database",
        "6: SqliteDatabase",
    ]
    assert refused("from hostd_db import Connection, Database, Schema, open_database\n") == []
