"""The query language of ``search_thoughts``: what a user typed, as the index's expressions.

Chinese has no spaces between words, so each run of CJK characters is indexed as its
overlapping bigrams plus its last character (``words_text``): a query of two or more
characters is the phrase of its bigrams, a single character a prefix. Latin words are words
(prefix-matched from three letters). Every query term reaches FTS5 as a quoted literal, never
as syntax (``plan_query``).

The team database has no FTS5: there each thought row carries a ``tsvector`` built here in
Python from the same words (``thought_words``: case and diacritics folded as FTS5's
``unicode61 remove_diacritics 2`` does), and a query becomes ``tsquery`` text of the same terms
(``search_queries``), so search finds on PostgreSQL what it finds beside the files. Lexemes
are passed as quoted literals, never parsed by a text search configuration.

This module imports nothing of ``store/``: the store's index (``store.search_index``, the
SQLite file beside the sessions) and its tables (``store.postgres``) use it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
CJK_RUN = re.compile(f"[{CJK}]+")
_TERMS = re.compile(f"[{CJK}]+|[^\\W{CJK}]+")
MAX_TERMS = 16
SNIPPET_CHARS = 160


def words_text(text: str) -> str:
    """What the index holds for a text: CJK runs as their bigrams plus their last character."""

    def bigrams(match: re.Match[str]) -> str:
        run = match.group(0)
        return " " + " ".join([*(run[i : i + 2] for i in range(len(run) - 1)), run[-1]]) + " "

    return CJK_RUN.sub(bigrams, text)


def _literal(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass(frozen=True)
class Query:
    """A user's query as FTS5 expressions: every term required, and any term (the fallback)."""

    terms: list[str]
    all_terms: str
    any_term: str


def plan_query(query: str) -> Query | None:
    """The query's terms (words, CJK runs), lower-cased and de-duplicated; None when it has none."""
    terms = list(dict.fromkeys(match.group(0).casefold() for match in _TERMS.finditer(query)))[:MAX_TERMS]
    if not terms:
        return None
    expressions = []
    for term in terms:
        if CJK_RUN.fullmatch(term):
            bigrams = " ".join(term[i : i + 2] for i in range(len(term) - 1))
            expressions.append(_literal(term) + "*" if len(term) == 1 else _literal(bigrams))
        else:
            expressions.append(_literal(term) + ("*" if len(term) >= 3 else ""))
    return Query(terms=terms, all_terms=" AND ".join(expressions), any_term=" OR ".join(expressions))


def snippet(content: str, terms: list[str]) -> str:
    """About SNIPPET_CHARS characters of the thought around the first term found in it."""
    flat = " ".join(content.split())
    folded = flat.casefold()
    found = [position for term in terms if (position := folded.find(term)) >= 0]
    start = max(0, min(found) - SNIPPET_CHARS // 3) if found else 0
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")


@dataclass(frozen=True)
class Hit:
    session_id: str
    session_name: str
    sequence: int
    thought_number: int
    kind: str
    branch_id: str | None
    stage: str | None
    tags: list[str]
    content: str
    score: float


# --- the team database: tsvector and tsquery text of the same words -----------------------------

_TOKEN = re.compile(r"[^\W_]+")
#: A lexeme is at most 2047 bytes: longer words are indexed (and looked for) by their start.
_LONGEST_TOKEN = 500
#: tsvector positions stop at 16383; later words keep that position (they are still found).
_LAST_POSITION = 16383


def _fold(text: str) -> str:
    """Case and diacritics folded, as FTS5's ``unicode61 remove_diacritics 2`` tokenizer does."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).casefold()


def _tokens(text: str) -> list[str]:
    """The index's tokens of a text: ``words_text``'s words, folded (CJK bigrams stay tokens)."""
    return [token[:_LONGEST_TOKEN] for token in _TOKEN.findall(_fold(words_text(text)))]


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def thought_words(thought: dict[str, Any]) -> str:
    """A thought's ``tsvector`` as text: its content's tokens, then its stage's and tags' at weight B."""
    content = _tokens(str(thought.get("content") or ""))
    labels = _tokens(" ".join([str(thought.get("stage") or ""), *map(str, thought.get("tags") or [])]))
    parts = [f"{_lexeme(token)}:{min(at, _LAST_POSITION)}" for at, token in enumerate(content, 1)]
    start = len(content) + 2  # labels are never a phrase with the content's last word
    parts += [f"{_lexeme(token)}:{min(at, _LAST_POSITION)}B" for at, token in enumerate(labels, start)]
    return " ".join(parts)


def _term_query(term: str) -> str | None:
    """One query term as ``tsquery`` text, matching what the SQLite index's expression matches."""
    if CJK_RUN.fullmatch(term):
        if len(term) == 1:
            return _lexeme(term) + ":*"
        return "(" + " <-> ".join(_lexeme(term[i : i + 2]) for i in range(len(term) - 1)) + ")"
    tokens = [token[:_LONGEST_TOKEN] for token in _TOKEN.findall(_fold(term))]
    if not tokens:
        return None
    prefix = ":*" if len(term) >= 3 or len(tokens[-1]) == _LONGEST_TOKEN else ""
    return "(" + " <-> ".join(_lexeme(token) for token in tokens) + prefix + ")"


def search_queries(query: Query) -> tuple[str, str] | None:
    """The query as (every term required, any term) ``tsquery`` texts; None when no term has a token."""
    terms = [found for term in query.terms if (found := _term_query(term)) is not None]
    if not terms:
        return None
    return " & ".join(terms), " | ".join(terms)
