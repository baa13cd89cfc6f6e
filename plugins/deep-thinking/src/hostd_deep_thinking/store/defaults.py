"""Each member's default session in the file store: where calls without ``session_id`` go.

``default-sessions.json`` holds one pointer per member; ``default-session.json``, the one
pointer of before members were recorded, is only read: it stays the default of every member
who has none of their own yet, so an upgrade continues the session it pointed at. Both are
cached until the file changes (one ``stat`` per thought).
"""

from __future__ import annotations

import contextlib
import json

from hostd_db import utc_stamp

from hostd_deep_thinking.store.layout import Layout, stat_or_none


class DefaultPointers:
    """The members' default-session pointers of one data folder."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.default_path = layout.default_path
        self.member_defaults_path = layout.member_defaults_path
        self._default: tuple[tuple[int, int] | None, str | None] = (None, None)
        self._member_defaults: tuple[tuple[int, int] | None, dict[str, str]] = (None, {})

    def default_session(self, member: str) -> str | None:
        """The session ``member``'s calls without ``session_id`` go to: their own pointer, else the
        one pointer of before members were recorded (so an upgrade continues the same session)."""
        own = self._member_pointers().get(member)
        return own if own is not None else self._shared_default()

    def _member_pointers(self) -> dict[str, str]:
        """Every member's default session (cached until the file changes)."""
        pointer = stat_or_none(self.member_defaults_path)
        key = (pointer.st_ino, pointer.st_mtime_ns) if pointer else None
        cached_key, cached = self._member_defaults
        if key == cached_key:
            return cached
        pointers: dict[str, str] = {}
        if pointer is not None:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
                raw = json.loads(self.member_defaults_path.read_bytes())
                pointers = {str(member): str(entry["session_id"]) for member, entry in raw.items()}
        self._member_defaults = (key, pointers)
        return pointers

    def _shared_default(self) -> str | None:
        """The pointer written before members were recorded (cached until the file changes)."""
        pointer = stat_or_none(self.default_path)
        key = (pointer.st_ino, pointer.st_mtime_ns) if pointer else None
        cached_key, cached_id = self._default
        if key == cached_key:
            return cached_id
        session_id = None
        if pointer is not None:
            try:
                session_id = str(json.loads(self.default_path.read_bytes())["session_id"])
            except (OSError, ValueError, KeyError, TypeError):
                session_id = None
        self._default = (key, session_id)
        return session_id

    def set_default_session(self, member: str, session_id: str) -> None:
        """Point ``member``'s calls without ``session_id`` at ``session_id`` (other members' stay)."""
        from hostd_fs import atomic_write

        with self.layout.file_lock(self.member_defaults_path):
            try:
                raw = json.loads(self.member_defaults_path.read_bytes())
                pointers = raw if isinstance(raw, dict) else {}
            except (OSError, ValueError):
                pointers = {}
            pointers[member] = {"session_id": session_id, "since": utc_stamp()}
            atomic_write(self.member_defaults_path, json.dumps(pointers, ensure_ascii=False))
        self._member_defaults = (None, {})
