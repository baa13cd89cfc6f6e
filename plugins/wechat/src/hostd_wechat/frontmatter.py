"""The metadata block at the top of every exported article, written and read back.

Written as YAML between ``---`` lines (PyYAML), falling back to plain ``key: value`` lines if
YAML cannot represent a value; read as YAML, else as ``key: value`` lines, else not at all.
Readers get a dict of strings, ints and ``None``; a missing block gives an empty dict.
"""

from __future__ import annotations

import re
from typing import Any

#: The fields every exported article carries, in this order.
FIELDS = (
    "title",
    "account_name",
    "author",
    "publish_time",
    "canonical_url",
    "source_url",
    "retrieved_at",
    "article_id",
    "word_count",
    "images",
)

_KEY_VALUE = re.compile(r"^([A-Za-z_][\w-]{0,63})\s*[:：]\s*(.*)$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:['’.-][A-Za-z0-9]+)*")


def word_count(text: str) -> int:
    """CJK characters count one each; Latin words (and numbers) count one each."""
    return len(_CJK.findall(text)) + len(_LATIN_WORD.findall(text))


def _plain_lines(metadata: dict[str, Any]) -> str:
    lines = []
    for key, value in metadata.items():
        shown = "" if value is None else " ".join(str(value).split())
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)


def render_front_matter(metadata: dict[str, Any]) -> str:
    """The block (with its ``---`` fences and the blank line after it)."""
    try:
        import yaml

        body = yaml.safe_dump(metadata, allow_unicode=True, sort_keys=False, width=10_000).strip()
    except Exception:  # an unrepresentable value: the plain form is still readable by us and by people
        body = _plain_lines(metadata)
    return f"---\n{body}\n---\n\n"


def split_front_matter(text: str) -> tuple[dict[str, Any], str, str]:
    """``(metadata, body, form)`` where form is ``yaml``, ``lines`` or ``none``."""
    text = text.lstrip("\ufeff")
    block, body = _fenced_block(text)
    if block is None:
        block, body = _leading_lines(text)
        if block is None:
            return {}, text, "none"
        return _parse_lines(block), body, "lines"
    parsed = _parse_yaml(block)
    if parsed is not None:
        return parsed, body, "yaml"
    lines = _parse_lines(block)
    return lines, body, "lines" if lines else "none"


def _fenced_block(text: str) -> tuple[str | None, str]:
    if not text.startswith("---"):
        return None, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return None, text
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).lstrip("\n")
    return None, text


def _leading_lines(text: str) -> tuple[str | None, str]:
    """Unfenced ``key: value`` lines at the very top, up to the first blank line."""
    lines = text.split("\n")
    taken = 0
    while taken < len(lines) and lines[taken].strip() and _KEY_VALUE.match(lines[taken].strip()):
        taken += 1
    if taken < 2 or (taken < len(lines) and lines[taken].strip()):
        return None, text
    return "\n".join(lines[:taken]), "\n".join(lines[taken:]).lstrip("\n")


def _parse_yaml(block: str) -> dict[str, Any] | None:
    import yaml

    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError:
        return None
    if not isinstance(loaded, dict):
        return None
    return {str(key): _scalar(value) for key, value in loaded.items()}


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _parse_lines(block: str) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for line in block.splitlines():
        match = _KEY_VALUE.match(line.strip())
        if match:
            value = match.group(2).strip().strip("\"'")
            parsed[match.group(1)] = value or None
    return parsed
