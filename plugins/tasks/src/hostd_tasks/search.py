"""Text search over tasks, Chinese included: SQLite FTS5, or a PostgreSQL ``tsvector`` built the same way.

FTS5's ``unicode61`` tokenizer splits Latin text into words but takes a run of CJK characters
(no spaces between words) as one token, so '数据库' would only be found by '数据库' exactly. The
text indexed here therefore rewrites each CJK run as its overlapping bigrams plus its last
character ('数据库' -> '数据 据库 库'): every character starts a token, so a one-character query
is a prefix query, a two-character query is one token, and a longer one is its bigrams as a
phrase. Latin terms are prefix queries too ('deploy' finds 'deployment').

The same idea as the memory plugin's search, written small for tasks (plugins never import each
other); a shared copy could move to ``packages/`` later.

User text reaches FTS5 only as string literals, so quotes, ``OR``, ``NEAR(`` or ``*`` in a
query are searched for, never obeyed.

On PostgreSQL the same indexed text is cut into tokens here, in Python, the way FTS5's
``unicode61`` tokenizer does (letters and digits, lower-case, accents dropped), and stored as a
``tsvector`` literal with positions; a query becomes a ``tsquery`` literal of the same terms
(phrases with ``<->``, prefixes with ``:*``). PostgreSQL's own parser never sees the text: its
word rules (and the server locale's idea of a CJK letter) would index differently.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_SCRIPT_RUN = re.compile(f"[{_CJK}]+|[^{_CJK}\\s]+")
_WORD_CHARACTER = re.compile(r"[^\W_]")  # a letter or digit: FTS5 drops the rest
#: More terms than this are ignored: a query is a few words, not a document.
MAX_TERMS = 16


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    return " " + " ".join([*(run[i : i + 2] for i in range(len(run) - 1)), run[-1]]) + " "


def indexed_text(*parts: str) -> str:
    """What the search index holds for a task: its texts, CJK runs as bigrams."""
    return _CJK_RUN.sub(_bigrams, "\n".join(part for part in parts if part))


def _literal(text: str) -> str:
    """An FTS5 string: quotes doubled, and NUL (which would end FTS5's reading of the query)
    written as the space it is to the tokenizer anyway: 'a', NUL, 'b' stays the phrase "a b"."""
    return '"' + text.replace('"', '""').replace("\x00", " ") + '"'


def _term_expression(term: str) -> str:
    if _CJK_RUN.fullmatch(term) and len(term) >= 2:
        grams = [term[i : i + 2] for i in range(len(term) - 1)]
        return _literal(" ".join(grams))  # the bigrams in a row: where the run occurs
    return _literal(term) + " *"  # a prefix: one CJK character, or a (last) Latin word begun


def _terms(query: str) -> list[str]:
    """The distinct search terms of a query (pieces holding a letter or digit), lower-case, in order."""
    terms: dict[str, None] = {}
    for piece in _SCRIPT_RUN.findall(query):
        if _WORD_CHARACTER.search(piece):
            terms.setdefault(piece.lower())
        if len(terms) >= MAX_TERMS:
            break
    return list(terms)


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for every term of ``query`` (all must occur); None if it has no word."""
    terms = _terms(query)
    if not terms:
        return None
    return " AND ".join(_term_expression(term) for term in terms)


# --- PostgreSQL: tokens made here, stored as a tsvector --------------------------------------

_TOKEN = re.compile(r"[^\W_]+")
#: PostgreSQL keeps word positions up to 16,383 and lexemes under 2 KiB; longer "words" are cut
#: (at 500 characters, under 2 KiB in any script) on both sides, so they still match as prefixes.
_MAX_POSITION = 16_383
_MAX_TOKEN = 500


def _fold(text: str) -> str:
    """Lower-case without accents, as FTS5's ``remove_diacritics`` does."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def _tokens(text: str) -> list[str]:
    return [token[:_MAX_TOKEN] for token in _TOKEN.findall(_fold(text))]


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def ts_vector(*parts: str) -> str:
    """The ``tsvector`` literal of a task's texts: every token of ``indexed_text`` with its positions."""
    positions: dict[str, list[int]] = defaultdict(list)
    for position, token in enumerate(_tokens(indexed_text(*parts)), start=1):
        positions[token].append(min(position, _MAX_POSITION))
    return " ".join(
        f"{_lexeme(token)}:{','.join(str(p) for p in dict.fromkeys(places))}"
        for token, places in positions.items()
    )


def _ts_term(term: str) -> str:
    if _CJK_RUN.fullmatch(term) and len(term) >= 2:
        grams = [token for i in range(len(term) - 1) for token in _tokens(term[i : i + 2])]
        return " <-> ".join(_lexeme(gram) for gram in grams)  # the bigrams in a row
    tokens = _tokens(term)
    return " <-> ".join([*(_lexeme(token) for token in tokens[:-1]), _lexeme(tokens[-1]) + ":*"])


def ts_query(query: str) -> str | None:
    """The ``tsquery`` literal matching what ``match_expression`` matches; None if it has no word."""
    terms = [term for term in _terms(query) if _tokens(term)]
    if not terms:
        return None
    return " & ".join(f"({_ts_term(term)})" for term in terms)
