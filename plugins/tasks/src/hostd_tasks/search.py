"""Text search over tasks on SQLite FTS5, Chinese included.

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
"""

from __future__ import annotations

import re

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
    return '"' + text.replace('"', '""') + '"'


def _term_expression(term: str) -> str:
    if _CJK_RUN.fullmatch(term) and len(term) >= 2:
        grams = [term[i : i + 2] for i in range(len(term) - 1)]
        return _literal(" ".join(grams))  # the bigrams in a row: where the run occurs
    return _literal(term) + " *"  # a prefix: one CJK character, or a (last) Latin word begun


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for every term of ``query`` (all must occur); None if it has no word."""
    terms: dict[str, None] = {}
    for piece in _SCRIPT_RUN.findall(query):
        if _WORD_CHARACTER.search(piece):
            terms.setdefault(piece.lower())
        if len(terms) >= MAX_TERMS:
            break
    if not terms:
        return None
    return " AND ".join(_term_expression(term) for term in terms)
