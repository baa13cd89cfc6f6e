"""Turning what a user typed into FTS5 queries, and hits into snippets.

Two full-text indexes sit beside the ``memories`` table (see ``store.py``):

- ``memory_fts`` uses the trigram tokenizer: any substring of three characters or more, in
  any script, is found (``数据库``, ``postgres``, ``api/v2``). It answers the *strict* stage:
  every term of the query must occur.
- ``memory_words`` indexes a rewritten text (``words_text``): Latin words as words, and each
  run of CJK characters as its overlapping bigrams plus its last character. A one- or
  two-character query (``库``, ``缓存``, ``Go``) is then a single token or token prefix, which
  the trigram index cannot answer. It also answers the *relaxed* stage: any term may occur,
  ranked by BM25 over bigrams and word stems, which is how long natural-language queries
  find memories that say the same thing in other words.

Every piece of user text reaches FTS5 only as a string literal (``"..."`` with quotes
doubled), so ``NEAR(``, ``OR``, ``*`` or a stray quote are searched for, never obeyed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_IS_CJK = re.compile(f"[{CJK_CLASS}]")
# Where a query splits into terms: whitespace and punctuation that never belongs to a term.
# '/', '.', '-', '_', ':' stay inside terms so paths, file names and versions survive.
_TERM_SEPARATORS = re.compile(
    r"[\s\x00-\x1f\x7f\u200b-\u200f\ufeff\u3000,，。、;；!！?？()（）\[\]【】{}<>《》\"'“”‘’`|·…]+"
)
_SCRIPT_BOUNDARY = re.compile(f"[{CJK_CLASS}]+|[^{CJK_CLASS}]+")
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 16

ENGLISH_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
# Characters that carry no topic on their own in Chinese; bigrams made only of them, or
# any bigram with a particle, are left out of the relaxed query.
CHINESE_FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊和与及或是在我你他她它们这那个些有就也都要把被给让怎么如何什哪为请"
)
CHINESE_PARTICLES = frozenset("的了吗呢吧啊")
_SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ings",
    "ing",
    "ers",
    "ies",
    "ied",
    "ed",
    "es",
    "er",
    "ly",
    "s",
)


def fts_literal(text: str) -> str:
    """An FTS5 string literal: the text is always data, whatever quotes or operators it holds."""
    return '"' + text.replace('"', '""') + '"'


def _bigram_run(match: re.Match[str]) -> str:
    run = match.group(0)
    grams = [run[i : i + 2] for i in range(len(run) - 1)]
    grams.append(run[-1])
    return " " + " ".join(grams) + " "


def words_text(text: str | None) -> str:
    """The text ``memory_words`` indexes: CJK runs become bigrams plus their last character.

    Registered as the SQL function ``memory_words_text`` so the triggers keeping the index in
    step compute exactly what queries assume. Every character of a run starts one token, so
    a one-character query is a prefix query and a two-character query is one token.
    """
    if not text:
        return ""
    return _CJK_RUN.sub(_bigram_run, text)


def is_cjk(text: str) -> bool:
    return bool(_IS_CJK.search(text))


def split_terms(query: str, *, lower: bool = True) -> list[str]:
    """The query's terms: split at whitespace, punctuation and script changes, de-duplicated.

    Latin terms are lower-cased (both indexes fold case) unless ``lower`` is False.
    """
    terms: dict[str, None] = {}
    for chunk in _TERM_SEPARATORS.split(query):
        for piece in _SCRIPT_BOUNDARY.findall(chunk):
            piece = piece.strip("-_.:/*~^+=&%$#@\\")
            if piece:
                terms.setdefault(piece.lower() if lower and not is_cjk(piece) else piece)
            if len(terms) >= MAX_TERMS:
                return list(terms)
    return list(terms)


def _stem(word: str) -> str:
    """A crude English stem, so 'configured', 'configuration' and 'configure' meet."""
    if len(word) < 5 or not word.isascii():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def _has_word_characters(text: str) -> bool:
    return bool(_WORD.search(text))


def short_term_expression(term: str) -> str | None:
    """The ``memory_words`` expression finding a 1-2 character term, or None if it has no word."""
    if not _has_word_characters(term):
        return None
    spaced = words_text(term).split()
    if is_cjk(term) and len(term) == 2 and len(spaced) == 2 and len(spaced[0]) == 2:
        return fts_literal(spaced[0])  # one bigram token
    return fts_literal(" ".join(spaced)) + " *"  # a character or a word: token prefix


@dataclass(frozen=True)
class Piece:
    """One alternative of the relaxed stage, and the index tokens that tell how common it is.

    ``vocabulary`` holds exact ``memory_words`` tokens; the piece matches at most as many
    memories as the rarest of them (a phrase) or about as many as the commonest (a stem's
    word forms). Empty means unknown: the piece is never dropped as too common.
    """

    expression: str
    vocabulary: tuple[str, ...] = ()
    phrase: bool = False


@dataclass
class QueryPlan:
    """What ``store.search`` runs: the strict expressions and the relaxed pieces."""

    terms: list[str]
    strict_trigram: str | None = None  # all terms of three or more characters
    strict_words: str | None = None  # all short terms that have word characters
    strict_scan: list[str] = field(default_factory=list)  # short punctuation-only terms (substring scan)
    relaxed: list[Piece] = field(default_factory=list)  # any term, as bigrams and stems

    @property
    def empty(self) -> bool:
        return not (self.strict_trigram or self.strict_words or self.strict_scan or self.relaxed)


def relaxed_pieces(terms: Iterable[str]) -> list[Piece]:
    """The relaxed stage's pieces: CJK bigrams (minus function ones), word stems, phrases."""
    pieces: dict[str, Piece] = {}

    def add(piece: Piece) -> None:
        pieces.setdefault(piece.expression, piece)

    for term in terms:
        if is_cjk(term):
            for run in _CJK_RUN.findall(term):
                if len(run) == 1:
                    add(Piece(fts_literal(run) + " *"))
                    continue
                for i in range(len(run) - 1):
                    gram = run[i : i + 2]
                    if set(gram) <= CHINESE_FUNCTION_CHARS or set(gram) & CHINESE_PARTICLES:
                        continue
                    add(Piece(fts_literal(gram), (gram,)))
            continue
        words = [w.lower() for w in _WORD.findall(term)]
        if len(words) > 1:  # 'api/v2', 'config.yaml': keep the words together
            add(Piece(fts_literal(" ".join(words)), tuple(words), phrase=True))
            continue
        for word in words:
            if word in ENGLISH_STOPWORDS:
                continue
            stem = _stem(word)
            prefix = len(stem) >= 3 or stem != word
            add(Piece(fts_literal(stem) + (" *" if prefix else ""), tuple(dict.fromkeys((word, stem)))))
    return list(pieces.values())


def plan_query(query: str) -> QueryPlan:
    terms = split_terms(query)
    plan = QueryPlan(terms=terms)
    long_terms = [t for t in terms if len(t) >= 3]
    short_terms = [t for t in terms if len(t) < 3]
    if long_terms:
        plan.strict_trigram = " AND ".join(fts_literal(t) for t in long_terms)
    short_expressions = []
    for term in short_terms:
        expression = short_term_expression(term)
        if expression is None:
            plan.strict_scan.append(term)
        else:
            short_expressions.append(expression)
    if short_expressions:
        plan.strict_words = " AND ".join(short_expressions)
    plan.relaxed = relaxed_pieces(terms)
    return plan


def relaxed_expression(text: str) -> str | None:
    """An any-term ``memory_words`` expression for free text (intents, errors, disclosures)."""
    pieces = relaxed_pieces(split_terms(text))
    return " OR ".join(p.expression for p in pieces) if pieces else None


def snippet(content: str, terms: Iterable[str], *, before: int = 40, after: int = 100) -> str:
    """The part of ``content`` around the first place a term occurs (its start if none does)."""
    lowered = content.lower()
    best = -1
    for term in terms:
        candidates = [term.lower()]
        if not is_cjk(term):
            candidates.append(_stem(term.lower()))
        else:
            candidates += [term[i : i + 2] for i in range(len(term) - 1)]
        for candidate in candidates:
            if not candidate:
                continue
            position = lowered.find(candidate)
            if position >= 0 and (best < 0 or position < best):
                best = position
                break
    if best < 0:
        best = 0
    start = max(0, best - before)
    end = min(len(content), best + after)
    text = " ".join(content[start:end].split())
    return ("…" if start > 0 else "") + text + ("…" if end < len(content) else "")


# --- preload: turning a context into search terms --------------------------------------

GENERIC_FOLDERS = frozenset(
    {"", "home", "users", "usr", "var", "tmp", "opt", "mnt", "root", "c:", "d:", "~", "."}
)
_PATH_LIKE = re.compile(r"(?:[A-Za-z]:)?[\\/]?(?:[\w.@~-]+[\\/])+[\w.@~-]*")
_NUMBERISH = re.compile(r"\b(?:0x[0-9a-fA-F]+|\d[\d.:,_-]*)\b")
_QUOTED = re.compile(r"'[^']{0,200}'|\"[^\"]{0,200}\"")


@dataclass(frozen=True)
class PathTerms:
    full: str
    tail: str | None
    name: str | None
    stem: str | None
    folders: list[str]


def path_terms(path_text: str, *, is_directory: bool) -> PathTerms:
    """The parts of a path worth looking for: the path itself, its tail, its name, its folders."""
    normalized = path_text.strip().replace("\\", "/")
    while "//" in normalized:
        normalized = normalized.replace("//", "/")
    parts = [part for part in normalized.split("/") if part]
    name = None if is_directory or not parts else parts[-1]
    stem = name.rsplit(".", 1)[0] if name and "." in name.strip(".") else name
    folder_parts = parts if is_directory else parts[:-1]
    folders = [f for f in folder_parts[-3:] if len(f) >= 3 and f.lower() not in GENERIC_FOLDERS]
    tail = "/".join(parts[-2:]) if len(parts) >= 2 else None
    return PathTerms(
        normalized.rstrip("/") or normalized, tail, name, stem if stem != name else None, folders
    )


def error_key_terms(message: str) -> list[str]:
    """An error message's key terms: paths, numbers, addresses and quoted values removed."""
    text = _PATH_LIKE.sub(" ", message)
    text = _QUOTED.sub(" ", text)
    text = _NUMBERISH.sub(" ", text)
    terms = []
    for term in split_terms(text, lower=False):
        if is_cjk(term) or (len(term) >= 3 and term.lower() not in ENGLISH_STOPWORDS and not term.isdigit()):
            terms.append(term)
    return terms[:MAX_TERMS]
