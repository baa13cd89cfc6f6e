"""Turn any title (an article headline, a model's suggestion) into a file name every OS accepts.

Where the sandbox refuses a bad name, this repairs one: plugins that derive file names from
text they do not control call it before writing, so the result is valid on Linux, macOS and
Windows, fits the 255-byte name limit with its extension intact, and is stable (cleaning a
cleaned name changes nothing).
"""

from __future__ import annotations

import re
import unicodedata

from hostd_fs.portable import WINDOWS_FORBIDDEN_CHARACTERS, is_windows_device_name, utf8_length

__all__ = ["clean_filename"]

# Invisible direction overrides can make "txt.exe" display as "exe.txt"; they have no place in
# a file name.
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_DROPPED_CATEGORIES = frozenset({"Cc", "Cs"})  # control characters, lone surrogates
# Short and plain, so "Version 2.5 notes" is not mistaken for a name with extension ".5 notes".
_EXTENSION = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_+-]{0,15}$")
_SPACE_RUN = re.compile(r" {2,}")
_EDGE_CHARACTERS = ". "
_ZERO_WIDTH_JOINER = "\u200d"
_MIN_MAX_BYTES = 8
_FALLBACK_DEFAULT = "untitled"


def _sanitize(name: str, replacement: str) -> str:
    kept: list[str] = []
    for character in unicodedata.normalize("NFC", name):
        if character.isspace():
            kept.append(" ")
        elif character in _BIDI_CONTROLS or unicodedata.category(character) in _DROPPED_CATEGORIES:
            continue
        elif character in WINDOWS_FORBIDDEN_CHARACTERS:
            kept.append(replacement)
        else:
            kept.append(character)
    text = _SPACE_RUN.sub(" ", "".join(kept))
    if replacement:
        text = re.sub(f"(?:{re.escape(replacement)})+", lambda _: replacement, text)
    return text


def _split_extension(text: str) -> tuple[str, str]:
    match = _EXTENSION.search(text)
    if match is None:
        return text, ""
    return text[: match.start()], match.group()


def _truncate_to_bytes(text: str, budget: int) -> str:
    # Cutting the encoded bytes and dropping an incomplete final sequence never splits a
    # character; a joiner left dangling at the end would only glue onto the extension.
    cut = text.encode("utf-8")[:budget].decode("utf-8", "ignore")
    return cut.rstrip(_ZERO_WIDTH_JOINER)


def _fit(stem: str, extension: str, max_bytes: int, fallback: str) -> str:
    if utf8_length(stem + extension) <= max_bytes:
        return stem + extension
    if utf8_length(extension) > max_bytes // 2:
        # An "extension" this long is part of the name, not worth keeping whole.
        stem, extension = stem + extension, ""
    budget = max_bytes - utf8_length(extension)
    stem = _truncate_to_bytes(stem, budget) or _truncate_to_bytes(fallback, budget)
    return stem + extension if extension else stem.rstrip(_EDGE_CHARACTERS)


def _prefix_device_name(stem: str, extension: str, prefix: str) -> str:
    return prefix + stem if is_windows_device_name(stem + extension) else stem


def _check_options(replacement: str, max_bytes: int) -> None:
    if max_bytes < _MIN_MAX_BYTES:
        raise ValueError(f"max_bytes must be at least {_MIN_MAX_BYTES}, got {max_bytes}")
    if replacement != _sanitize(replacement, "").strip(_EDGE_CHARACTERS) or utf8_length(replacement) > 4:
        raise ValueError(f"replacement {replacement!r} must be a short, file-name-safe string")


def clean_filename(
    name: str,
    *,
    max_bytes: int = 255,
    replacement: str = "_",
    default: str = "untitled",
) -> str:
    """A file name safe on Linux, macOS and Windows, derived from `name`.

    Drops control and direction-override characters, replaces ``<>:"/\\|?*`` with
    `replacement`, collapses runs of spaces and replacements, strips leading and trailing dots
    and spaces, prefixes Windows device names (`CON.md` -> `_CON.md`), falls back to `default`
    when nothing is left, and truncates to `max_bytes` of UTF-8 keeping the extension.
    """
    _check_options(replacement, max_bytes)
    prefix = replacement or "_"
    fallback = _sanitize(default, replacement).strip(_EDGE_CHARACTERS) or _FALLBACK_DEFAULT

    # Split the extension before stripping leading dots, so ".md" becomes "untitled.md".
    stem, extension = _split_extension(_sanitize(name, replacement).rstrip(_EDGE_CHARACTERS))
    stem = _prefix_device_name(stem.lstrip(_EDGE_CHARACTERS) or fallback, extension, prefix)
    cleaned = _fit(stem, extension, max_bytes, fallback)
    # Truncation can itself produce a device name ("CONTENTS" cut to "CON").
    stem, extension = _split_extension(cleaned)
    return _fit(_prefix_device_name(stem, extension, prefix), extension, max_bytes, fallback)
