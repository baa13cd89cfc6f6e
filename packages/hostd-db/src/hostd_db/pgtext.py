"""Text that PostgreSQL can hold, and the store SQL both backends share.

PostgreSQL's text types refuse NUL, which SQLite (and a user's memory or task) may hold. A
private-use character escapes itself and NUL, so any string round-trips; text holding neither
passes unchanged. Stores written once for SQLite's ``?`` placeholders run on psycopg through
``qmark_to_pyformat``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hostd_db.spans import active_tracer, statement_span

__all__ = ["QmarkConnection", "decode_text", "decoded_tuple_rows", "encode_text", "qmark_to_pyformat"]

_ESCAPE = "\ue000"
_ESCAPED = re.compile(f"{_ESCAPE}(.)", re.DOTALL)
_UNESCAPE = {"e": _ESCAPE, "0": "\x00"}


def encode_text(value: object) -> object:
    """A parameter as PostgreSQL may store it: NUL and the escape character escaped."""
    if isinstance(value, str) and ("\x00" in value or _ESCAPE in value):
        return value.replace(_ESCAPE, _ESCAPE + "e").replace("\x00", _ESCAPE + "0")
    return value


def decode_text(value: object) -> object:
    """The inverse of ``encode_text``."""
    if isinstance(value, str) and _ESCAPE in value:
        return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(0)), value)
    return value


def _decoded(value: object) -> object:
    """A column's value with its text decoded, inside arrays too (``ARRAY(SELECT ...)`` of text)."""
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    return decode_text(value)


def decoded_tuple_rows(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A psycopg row factory: tuples, strings decoded (see ``encode_text``), in arrays as well."""
    return lambda values: tuple(_decoded(value) for value in values)


_SQL_CACHE: dict[str, str] = {}


def qmark_to_pyformat(sql: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    converted = _SQL_CACHE.get(sql)
    if converted is None:
        converted = _SQL_CACHE[sql] = sql.replace("%", "%%").replace("?", "%s")
    return converted


class QmarkConnection:
    """A psycopg connection as a store written for SQLite sees it: ``?`` parameters, NUL-safe
    text both ways, rows as tuples."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self._tracer = active_tracer()  # each statement a span while OpenTelemetry tracing is on

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if self._tracer is not None:
            with statement_span(self._tracer, "postgresql", self._connection.info.dbname, sql):
                return self._execute(sql, parameters)
        return self._execute(sql, parameters)

    def _execute(self, sql: str, parameters: Sequence[Any]) -> Any:
        cursor = self._connection.cursor(row_factory=decoded_tuple_rows)
        cursor.execute(qmark_to_pyformat(sql), [encode_text(value) for value in parameters])
        return cursor

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        if self._tracer is not None:
            with statement_span(self._tracer, "postgresql", self._connection.info.dbname, sql):
                return self._executemany(sql, parameters)
        return self._executemany(sql, parameters)

    def _executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Any:
        rows = [[encode_text(value) for value in row] for row in parameters]
        cursor = self._connection.cursor(row_factory=decoded_tuple_rows)
        if rows:
            cursor.executemany(qmark_to_pyformat(sql), rows)
        return cursor
