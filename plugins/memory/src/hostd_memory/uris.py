"""Memory URIs: ``domain://path``, parsed, checked and normalised to one spelling.

``project://a/``, ``project://a`` and ``Project://a//`` are the same memory, so every URI
that reaches the store goes through ``parse_uri`` first. The ``system`` domain is reserved
for the read-only views of ``read_memory`` (boot, index, recent).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

SYSTEM_DOMAIN = "system"
MAX_URI_LENGTH = 512
MAX_DOMAIN_LENGTH = 64
DOMAIN_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
VALID_FORM = "domain://path/to/memory (domain: lowercase letters, digits and '-'; path: one or more segments)"
# Characters a path segment may not hold: separators, whitespace, controls, and the URL
# delimiters that would make a URI ambiguous when it is mentioned inside text.
_FORBIDDEN_IN_SEGMENT = re.compile(r"[\s\\?#<>\"`|\x00-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")
# URIs mentioned inside memory content: a domain, '://', then anything up to whitespace or
# closing punctuation (ASCII or CJK).
MENTION_PATTERN = re.compile(
    r"(?<![a-z0-9-])([a-z0-9][a-z0-9-]*)://([^\s<>\"'`)\]}，。、；：！？）】》」』]+)"
)


class InvalidUri(ValueError):
    """A URI that cannot name a memory; ``reason`` is a stable word the tools translate."""

    def __init__(self, reason: str, uri: str) -> None:
        super().__init__(f"{reason}: {uri!r}")
        self.reason = reason
        self.uri = uri


@dataclass(frozen=True)
class MemoryUri:
    domain: str
    path: str

    def __str__(self) -> str:
        return f"{self.domain}://{self.path}"

    @property
    def is_system(self) -> bool:
        return self.domain == SYSTEM_DOMAIN


def parse_domain(text: str) -> str:
    """A domain name alone (as the ``domain`` filter of search and list takes it)."""
    domain = text.strip().lower()
    if domain.endswith("://"):
        domain = domain[:-3]
    if not DOMAIN_PATTERN.match(domain):
        raise InvalidUri("bad_domain", text)
    return domain


def parse_uri(text: str) -> MemoryUri:
    """Check a URI and return its one normal spelling.

    The domain is lower-cased, the path is NFC-normalised, and empty segments (doubled or
    trailing slashes) are dropped; '.' and '..' segments are refused rather than resolved,
    since a memory path is a name, not a file-system walk.
    """
    raw = text.strip()
    if len(raw) > MAX_URI_LENGTH:
        raise InvalidUri("too_long", text[:80])
    if "://" not in raw:
        raise InvalidUri("missing_scheme", text)
    domain_text, path_text = raw.split("://", 1)
    domain = parse_domain(domain_text) if domain_text else ""
    if not domain:
        raise InvalidUri("bad_domain", text)
    path_text = unicodedata.normalize("NFC", path_text)
    segments = [segment for segment in path_text.split("/") if segment != ""]
    if not segments:
        raise InvalidUri("empty_path", text)
    for segment in segments:
        if segment in (".", ".."):
            raise InvalidUri("dot_segment", text)
        if _FORBIDDEN_IN_SEGMENT.search(segment) or any(0xD800 <= ord(ch) <= 0xDFFF for ch in segment):
            raise InvalidUri("bad_character", text)
    return MemoryUri(domain, "/".join(segments))


def mentioned_uris(content: str, *, limit: int = 50) -> list[str]:
    """Memory URIs written inside a text, normalised, in order of first mention."""
    found: dict[str, None] = {}
    for match in MENTION_PATTERN.finditer(content):
        try:
            uri = parse_uri(f"{match.group(1)}://{match.group(2).rstrip('.,;:!?')}")
        except InvalidUri:
            continue
        found.setdefault(str(uri))
        if len(found) >= limit:
            break
    return list(found)


def mentions(content: str, uri: str) -> bool:
    """Whether ``content`` mentions exactly ``uri`` (not merely a longer URI starting with it)."""
    return uri in mentioned_uris(content, limit=1000)
