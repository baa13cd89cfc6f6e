"""File names for exported articles: the user's pattern, the shared cleaner, ``_2`` suffixes."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from hostd import Text

PLACEHOLDERS = ("date", "title", "account_name")
DEFAULT_PATTERN = "{title}"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
# Room left for a "_NN" suffix under the usual 255-byte limit of a file name.
_NAME_BUDGET = 240


EMPTY_PATTERN = Text(en="empty pattern", zh="模式为空")
UNKNOWN_PLACEHOLDER = Text(en="unknown placeholder {placeholder}", zh="未知的占位符 {placeholder}")
UNBALANCED_BRACES = Text(en="unbalanced braces", zh="花括号不成对")


def pattern_problem(pattern: str) -> Text | None:
    """``None`` when ``pattern`` is not blank and uses only known placeholders and balanced braces."""
    if not pattern.strip():
        return EMPTY_PATTERN
    unknown = [name for name in _PLACEHOLDER.findall(pattern) if name not in PLACEHOLDERS]
    if unknown:
        return UNKNOWN_PLACEHOLDER.format(placeholder="{" + unknown[0] + "}")
    if "{" in _PLACEHOLDER.sub("", pattern) or "}" in _PLACEHOLDER.sub("", pattern):
        return UNBALANCED_BRACES
    return None


def file_name(pattern: str, *, date: str, title: str, account_name: str) -> str:
    """The cleaned ``.md`` file name for one article."""
    from hostd_fs import clean_filename

    values = {"date": date, "title": title.strip(), "account_name": account_name.strip()}
    stem = _PLACEHOLDER.sub(lambda m: values[m.group(1)], pattern).strip()
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    name = clean_filename(stem + ".md", max_bytes=_NAME_BUDGET, default="untitled")
    return name if name.lower().endswith(".md") else name + ".md"


class NameReservations:
    """Names taken during one call, so two articles of one batch never get the same file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken: set[Path] = set()

    def reserve(self, folder: Path, name: str, *, overwrite: bool) -> Path:
        stem, dot, extension = name.rpartition(".")
        if not dot:
            stem, extension = name, ""
        with self._lock:
            candidate = folder / name
            counter = 1
            while candidate in self._taken or (not overwrite and candidate.exists()):
                counter += 1
                candidate = folder / (f"{stem}_{counter}.{extension}" if extension else f"{stem}_{counter}")
            self._taken.add(candidate)
            return candidate
