"""What counts as usable content, and the separator that starts each appended section."""

from __future__ import annotations

import datetime

from hostd import Text

#: Characters that show nothing but that ``str.isspace`` does not count as space.
INVISIBLE_CHARACTERS = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")

#: The separator's heading when ``separator_heading`` is not configured, in the server's language.
DEFAULT_HEADING = Text(en="Summary update", zh="总结更新")

MARKDOWN_SUFFIXES = (".md", ".markdown")


def is_blank(text: str) -> bool:
    """True for text a reader would see as empty: any Unicode space or zero-width character."""
    return all(ch.isspace() or ch in INVISIBLE_CHARACTERS for ch in text)


def is_markdown_path(file_path: str) -> bool:
    """The spec's extension rule, in any letter case (``Notes.MD`` is fine)."""
    return file_path.lower().endswith(MARKDOWN_SUFFIXES)


def separator(heading: str, now: datetime.datetime | None = None) -> str:
    """The spec's ``\\n\\n---\\n\\n## <heading> [YYYY-MM-DD HH:MM:SS]\\n\\n``, in local time."""
    stamp = (now or datetime.datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    return f"\n\n---\n\n## {heading} [{stamp}]\n\n"


def section_bytes(content: bytes, heading: str, existing_size: int) -> bytes:
    """The bytes to append: the content alone to an empty file, else separator then content."""
    if existing_size == 0:
        return content
    return separator(heading).encode("utf-8") + content
