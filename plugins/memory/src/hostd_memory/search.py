"""Turning what a user typed into FTS5 queries, and hits into snippets.

Two full-text indexes sit beside the ``memories`` table (see ``store/schema.py``):

- ``memory_words`` indexes a rewritten text (``words_text``): Latin words as words, and each
  run of CJK characters as its overlapping bigrams plus its last character. It answers both
  stages of a search. The *strict* stage (every term must occur, English stop words aside)
  looks up an English word as any of its forms (``deploy``: deploys, deployed, deploying,
  deployment...), a CJK run as its bigrams in a row (``数据库``: ``数据 据库``, which is where the
  run occurs), 'api/v2' as the phrase ``api v2``, and a one- or two-character term (``库``,
  ``缓存``, ``Go``) as a token or a token prefix. The *relaxed* stage (any term may occur) ranks
  by BM25 over bigrams and words, which is how long natural-language queries find memories
  that say the same thing in other words.
- ``memory_fts`` uses the trigram tokenizer: any substring of three characters or more, in
  any script. The strict stage uses it for terms the word index cannot split into words (in
  scripts other than Latin and CJK, or made of symbols). Looking a term up there means
  merging the posting lists of all its trigrams, which for a common word costs a pass over
  most of the index: the word index reads one list per word.

Every piece of user text reaches FTS5 only as a string literal (``"..."`` with quotes
doubled), so ``NEAR(``, ``OR``, ``*`` or a stray quote are searched for, never obeyed.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import Stemmer
from hostd_errors.stopwords import ENGLISH_STOP_WORDS

CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
# Where a query splits into terms: whitespace and punctuation that never belongs to a term.
# '/', '.', '-', '_', ':' stay inside terms so paths, file names and versions survive.
_TERM_SEPARATORS = re.compile(
    r"[\s\x00-\x1f\x7f\u200b-\u200f\ufeff\u3000,，。、;；!！?？()（）\[\]【】{}<>《》\"'“”‘’`|·…]+"
)
_SCRIPT_BOUNDARY = re.compile(f"[{CJK_CLASS}]+|[^{CJK_CLASS}]+")
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 16

# The shared English stop words, and memory's own: the pieces of contractions and possessives
# ("Ben's", "didn't"), pronouns, auxiliaries and question words: questions about what was said
# are full of them, and they name nothing.
ENGLISH_STOPWORDS = ENGLISH_STOP_WORDS | frozenset(
    {
        "about",
        "am",
        "being",
        "d",
        "hers",
        "him",
        "ll",
        "m",
        "re",
        "s",
        "should",
        "t",
        "ve",
        "where",
        "whom",
        "whose",
    }
)
# Words a question is phrased with rather than about ("What kind of...", "Would she likely...");
# left out only when the query reads as a question.
QUESTION_WORDS = frozenset(
    ["ever", "kind", "likely", "might", "probably", "sort", "tell", "told", "type", "usually"]
)
_QUESTION_START = frozenset(
    ["what", "when", "where", "which", "who", "whom", "whose", "why", "how", "did", "does", "do", "is",
     "are", "was", "were", "would", "could", "can", "has", "have", "will", "should"]
)  # fmt: skip
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
# Endings that make the forms of an English word from its stem (see ``word_forms``).
_FORM_ENDINGS = ("", "e", "s", "es", "ed", "ing", "er", "ers", "ly", "ment", "ments", "ation", "ations")


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
    return bool(_CJK_RUN.search(text))


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


_ENGLISH = Stemmer.Stemmer("english")
# Endings tried on a word, its Snowball stem and its crude stem to find the forms that share its
# Snowball stem (see ``word_forms``).
_CANDIDATE_ENDINGS = (
    "", "e", "s", "es", "ed", "d", "ing", "er", "ers", "ment", "ments", "ation", "ations", "ion",
    "ions", "y", "ies", "ied",
)  # fmt: skip


def english_stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lower-case English word: 'moved', 'moving', 'moves' -> 'move'."""
    return str(_ENGLISH.stemWord(word))


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
    piece = _short_piece(term)
    return piece.expression if piece else None


def _short_piece(term: str) -> Piece | None:
    if not _has_word_characters(term):
        return None
    spaced = words_text(term).split()
    if is_cjk(term) and len(term) == 2 and len(spaced) == 2 and len(spaced[0]) == 2:
        return Piece((spaced[0],))  # one bigram token
    return Piece((" ".join(spaced),), prefix=True)  # a character or a word: token prefix


def word_forms(word: str) -> tuple[str, ...]:
    """Index tokens that are forms of a lower-case ASCII word: itself, and its stem with common endings.

    Searching for the forms as exact tokens finds 'deploying' for 'deploy' as a prefix query
    would, without FTS5 reading in full every token that shares the prefix ('limit*' reads
    'limited', 'servic*' reads 'service').
    """
    return _word_forms(word)


@functools.lru_cache(maxsize=8192)
def _word_forms(word: str) -> tuple[str, ...]:
    """The forms of ``word``: endings tried on the word and its stems, kept when the Snowball
    stemmer gives them the word's stem ('move': moves, moved, moving; not 'movement')."""
    if len(word) < 3 or not (word.isascii() and word.isalpha()):
        return (word,)
    stem = _stem(word)
    snowball = english_stem(word)
    bases = dict.fromkeys([word, stem, snowball, word[:-1] if word.endswith("e") else word])
    if snowball.endswith(("i", "e")):
        bases[snowball[:-1]] = None  # 'move': moving
    if snowball.endswith("i"):
        bases[snowball[:-1] + "y"] = None  # 'studi': study, studying
    candidates: dict[str, None] = {}
    for base in bases:
        candidates.update(
            dict.fromkeys(
                base + ending
                for ending in _CANDIDATE_ENDINGS
                if not (base.endswith("e") and ending[:1] in ("a", "e", "i", "o", "u", "y"))
            )
        )
        if len(base) >= 3 and base[-1] in "bdgklmnprt" and base[-2] in "aeiou" and base[-3] not in "aeiou":
            candidates.update(dict.fromkeys(base + base[-1] + ending for ending in ("ed", "ing", "er")))
    forms = [word] + [
        form for form in candidates if form != word and len(form) >= 3 and english_stem(form) == snowball
    ]
    return tuple(forms)


@dataclass(frozen=True)
class Piece:
    """One query term as ``memory_words`` phrases, any of which may match.

    ``forms`` are phrases of exact index tokens separated by spaces: a word and its
    inflections, a CJK bigram, the bigrams of a CJK run, the words of 'api/v2'. With
    ``prefix`` the last token of a form is a prefix (one CJK character, a short word, a word in
    another script); such pieces are taken as they are. The store counts the memories holding
    each token of the other pieces, to leave out forms that occur nowhere and, in the relaxed
    stage, forms too common to rank by. ``stem`` is a word's stem: when none of its forms is too
    common, ``"stem" *`` finds them all as one phrase, so BM25 weighs the word once, not once per
    form (a prefix is read whole, which is cheap exactly when no token starting with it is common).
    """

    forms: tuple[str, ...]
    prefix: bool = False
    stem: str | None = None

    @property
    def expression(self) -> str:
        return self.expression_of(self.forms)

    def expression_of(self, forms: Iterable[str]) -> str:
        star = " *" if self.prefix else ""
        parts = [fts_literal(form) + star for form in forms]
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    @property
    def counted(self) -> bool:
        """Whether the store may count this piece's tokens (a prefix is not one token)."""
        return not self.prefix


def word_piece(word: str) -> Piece:
    """A lower-case ASCII word as a piece: its forms, and its stem when that is long enough to be a prefix."""
    forms = word_forms(word)
    stem = _stem(word)
    return Piece(forms, stem=stem if len(forms) > 1 and len(stem) >= 3 else None)


@dataclass
class QueryPlan:
    """What ``store.search`` runs: the strict stage (every term) and the relaxed pieces (any term)."""

    terms: list[str]
    strict_trigram: str | None = None  # long terms only a substring search finds (other scripts, symbols)
    strict_pieces: list[Piece] = field(default_factory=list)  # terms the word index finds
    strict_scan: list[str] = field(default_factory=list)  # short punctuation-only terms (substring scan)
    relaxed: list[Piece] = field(default_factory=list)  # any term, as bigrams, word forms and phrases
    names: frozenset[str] = frozenset()  # words the query writes with a capital: weighed more

    @property
    def empty(self) -> bool:
        return not (self.strict_trigram or self.strict_pieces or self.strict_scan or self.relaxed)


def _cjk_phrase(run: str) -> str:
    """The bigram tokens a CJK run of two or more characters is found by, as one phrase."""
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def relaxed_pieces(terms: Iterable[str]) -> list[Piece]:
    """The relaxed stage's pieces: CJK bigrams (minus function ones), word forms, phrases."""
    pieces: dict[tuple[tuple[str, ...], bool], Piece] = {}

    def add(piece: Piece) -> None:
        pieces.setdefault((piece.forms, piece.prefix), piece)

    for term in terms:
        if is_cjk(term):
            for run in _CJK_RUN.findall(term):
                if len(run) == 1:
                    add(Piece((run,), prefix=True))
                    continue
                for i in range(len(run) - 1):
                    gram = run[i : i + 2]
                    if set(gram) <= CHINESE_FUNCTION_CHARS or set(gram) & CHINESE_PARTICLES:
                        continue
                    add(Piece((gram,)))
            continue
        words = [w.lower() for w in _WORD.findall(term)]
        if len(words) > 1:  # 'api/v2', 'config.yaml': keep the words together
            add(Piece((" ".join(words),)))
            continue
        for word in words:
            if word in ENGLISH_STOPWORDS:
                continue
            if word.isascii() or len(word) < 3:
                add(word_piece(word))
            else:  # another script: no stemmer, so the word is a prefix
                add(Piece((word,), prefix=True))
    return list(pieces.values())


def _strict_piece(term: str) -> Piece | None:
    """How the word index finds a term of three or more characters; None if only trigrams can."""
    if is_cjk(term):
        return Piece((_cjk_phrase(term),))
    words = [w.lower() for w in _WORD.findall(term)]
    if not words or not all(w.isascii() for w in words):
        return None
    if len(words) == 1:
        return word_piece(words[0])
    return Piece((" ".join(words),))


def is_question(query: str, terms: Sequence[str]) -> bool:
    """Whether an English query reads as a question (ends with '?' or opens with a question word)."""
    return query.rstrip().endswith("?") or bool(terms and terms[0] in _QUESTION_START)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(f"{m[:3]}(?:{m[3:]})?" for m in _MONTHS) + r"|sept)\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|2\d)\d\d)"
_DATES = [
    re.compile(r"\b(?P<year>\d{4})[-/.](?P<mon>[01]?\d)[-/.](?P<day>[0-3]?\d)\b"),
    re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
]


def _date_piece(match: re.Match[str]) -> tuple[str, Piece] | None:
    """A date as the ways memories write it: '2023-05-08', '8 May 2023' and 'May 8, 2023' are one
    piece whose forms are each spelling's tokens in a row ('8 may 2023', 'may 8 2023', '2023 05 08',
    also with 'May' cut to 3 letters); a month and year likewise. None: not a real date."""
    found = match.groupdict()
    year = int(found["year"])
    if found.get("mon"):
        month = int(found["mon"])
    else:
        name = found["month"].lower().rstrip(".")
        month = next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name[:3]))
    if not 1 <= month <= 12:
        return None
    names = dict.fromkeys([_MONTHS[month - 1], _MONTHS[month - 1][:3]])
    day_text = found.get("day")
    if day_text is None:
        forms = [f"{name} {year}" for name in names] + [f"{year} {month:02d}"]
        return f"{year}-{month:02d}", Piece(tuple(dict.fromkeys(forms)))
    day = int(day_text)
    if not 1 <= day <= 31:
        return None
    forms = [f"{day} {name} {year}" for name in names] + [f"{name} {day} {year}" for name in names]
    forms += [f"{year} {month:02d} {day:02d}"]
    return f"{year}-{month:02d}-{day:02d}", Piece(tuple(dict.fromkeys(forms)))


def _take_dates(query: str) -> tuple[str, list[tuple[str, Piece]]]:
    """The query without the dates it names, and each date as a term and a piece."""
    dates: list[tuple[str, Piece]] = []
    for pattern in _DATES:

        def take(match: re.Match[str]) -> str:
            date = _date_piece(match)
            if date is None:
                return match.group(0)
            dates.append(date)
            return " "

        query = pattern.sub(take, query)
    return query, dates


def plan_query(query: str) -> QueryPlan:
    """The two stages for a query.

    Strict: every term must occur, English stop words aside when other terms remain; a date
    however it is written (``_take_dates``). ASCII words
    and CJK runs are looked up in ``memory_words`` (a word as any of its forms, a run as its
    bigrams in a row), which reads far less than the trigram index would for the same term;
    terms in other scripts or made of symbols go to the trigram index, short symbols to a scan.
    """
    rest, dates = _take_dates(query)
    terms = split_terms(rest) if dates else split_terms(query)
    if is_question(query, terms):
        terms = [t for t in terms if t not in QUESTION_WORDS] or terms
    plan = QueryPlan(terms=terms + [term for term, _ in dates if term not in terms])
    plan.strict_pieces += [piece for _, piece in dates]
    strict_terms = [t for t in terms if t not in ENGLISH_STOPWORDS] or terms
    trigram_terms = []
    for term in strict_terms:
        piece = _strict_piece(term) if len(term) >= 3 else _short_piece(term)
        if piece is not None:
            plan.strict_pieces.append(piece)
        elif len(term) >= 3:
            trigram_terms.append(term)
        else:
            plan.strict_scan.append(term)
    if trigram_terms:
        plan.strict_trigram = " AND ".join(fts_literal(t) for t in trigram_terms)
    plan.relaxed = relaxed_pieces(terms) + [piece for _, piece in dates]
    plan.names = names_in(query)
    return plan


def names_in(query: str) -> frozenset[str]:
    """Words the query writes with a capital after its first word ('When did Anna...'): mostly
    names, which say more about which memory is meant than their counts alone tell."""
    words = _WORD.findall(query)
    return frozenset(
        word.lower()
        for word in words[1:]
        if word[:1].isupper()
        and word.isascii()
        and not word.isupper()
        and word.lower() not in ENGLISH_STOPWORDS
    )


def relaxed_expression(text: str) -> str | None:
    """An any-term ``memory_words`` expression for free text (intents, errors, disclosures).

    Nothing is counted here, so a word is its stem as a prefix.
    """
    pieces = relaxed_pieces(split_terms(text))
    parts = [Piece((p.stem,), prefix=True).expression if p.stem else p.expression for p in pieces]
    return " OR ".join(parts) if parts else None


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


# --- the final ranking, the same on both backends -------------------------------------------
#
# Each engine finds the candidates (every term, then any term) and orders them its own way
# (FTS5's BM25; PostgreSQL's ts_rank, which knows nothing of how rare a word is). The best few
# of each stage are then scored here, from the memories' own text and the pieces' document
# counts the store has already taken: BM25 with parameters for short texts, fields weighted as
# the indexes weigh them, and a bonus when the query's words stand close together.

#: BM25's term-frequency saturation and length normalisation. Memories are mostly short (a turn
#: of a chat, a note): a low ``b`` stops a one-line memory that holds only the commonest word
#: of the query (a speaker's name) from outranking a longer one that holds the rare ones.
#: Measured on bench/memory_eval and the conversations (bench_memory.py --only quality).
BM25_K1 = 2.0
BM25_B = 0.2
#: Weights of a match by field: a memory's path is the label its writer chose, so a word there
#: says more than in the indexes' own weights (path 4, disclosure 2, content 1).
FIELD_WEIGHTS = (("path", 8.0), ("disclosure", 2.0), ("content", 1.0))
#: A pair of the query's pieces found ``d`` tokens apart adds PROXIMITY x the rarer one's weight / d.
PROXIMITY = 0.1
#: A piece the query writes with a capital (a name, see ``names_in``) weighs this much more.
NAME_WEIGHT = 1.5
#: A document's text beyond this many characters is not read for the score.
SCORE_TEXT_CHARS = 4_000
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def score_tokens(text: str) -> list[str]:
    """The tokens of a text as the word index holds them (close enough for scoring: cheaper than
    ``index_tokens``)."""
    lowered = text[:SCORE_TEXT_CHARS].lower()
    if not lowered.isascii():
        lowered = _COMBINING.sub("", unicodedata.normalize("NFKD", words_text(lowered)))
    return _TOKEN.findall(lowered)


@dataclass(frozen=True)
class ScoredPiece:
    """A piece with its weight (inverse document frequency) for ``Scorer``."""

    piece: Piece
    weight: float
    #: A CJK piece's forms as the text writes them ('数据 据库' is '数据库'); None for words.
    needles: tuple[str, ...] | None = None
    #: A word piece's forms as one pattern over the lower-cased text (None for CJK).
    pattern: re.Pattern[str] | None = None


class Scorer:
    """BM25 over a few candidates, with a proximity bonus, from their text (see above)."""

    def __init__(
        self, pieces: Sequence[tuple[float, Piece]], total: int, names: frozenset[str] = frozenset()
    ) -> None:
        """``pieces``: (about how many memories hold it, piece), infinite when not counted (a prefix:
        taken as a tenth of the store); ``total``: about how many memories there are."""
        n = float(max(total, 1))
        self.pieces = []
        for count, piece in pieces:
            held = min(n * 0.1 if math.isinf(count) else float(count), n)
            weight = math.log(1 + (n - held + 0.5) / (held + 0.5))
            if names and not names.isdisjoint(piece.forms):
                weight *= NAME_WEIGHT
            if is_cjk(piece.forms[0]):
                needles = tuple(
                    parts[0] + "".join(part[-1] for part in parts[1:])
                    for parts in (form.split(" ") for form in piece.forms)
                )
                self.pieces.append(ScoredPiece(piece, weight, needles=needles))
            else:
                self.pieces.append(ScoredPiece(piece, weight, pattern=_word_pattern(piece)))

    def score(self, documents: Sequence[tuple[str, str, str]]) -> list[float]:
        """The scores (higher is better) of documents given as (path, disclosure, content)."""
        if not self.pieces or not documents:
            return [0.0] * len(documents)
        read = [[_ScoreText(text) for text in document] for document in documents]
        lengths = [disclosure.length + content.length for _, disclosure, content in read]
        average = max(sum(lengths) / len(lengths), 1.0)
        return [self._score(fields, length / average) for fields, length in zip(read, lengths, strict=True)]

    def _score(self, fields: list[_ScoreText], relative_length: float) -> float:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * relative_length)
        total = 0.0
        places: list[tuple[float, list[int]]] = []
        for scored in self.pieces:
            frequency = 0.0
            for (name, weight), text in zip(FIELD_WEIGHTS, fields, strict=True):
                if not text.text:
                    continue
                count, found = text.occurrences(scored)
                frequency += weight * count
                if name == "content" and found:
                    places.append((scored.weight, found))
            if frequency:
                total += scored.weight * frequency * (BM25_K1 + 1) / (frequency + norm)
        for i in range(len(places)):
            for j in range(i + 1, len(places)):
                distance = min(abs(a - b) for a in places[i][1] for b in places[j][1])
                total += PROXIMITY * min(places[i][0], places[j][0]) / max(distance, 1)
        return total


#: Characters that continue a word around a word piece: digits and the letters of Latin, Greek and
#: Cyrillic (a CJK character next to a word does not, as in the index). A small class: Python's
#: ``re`` takes milliseconds to compile one spanning every CJK block.
_WORD_CHAR = "[0-9a-z\u00c0-\u024f\u0370-\u052f]"
#: About how many characters a word and its space take in English (places are in words).
_CHARS_PER_WORD = 6


def _word_pattern(piece: Piece) -> re.Pattern[str]:
    """The forms of a word piece as one pattern: each token whole (a prefix: its start), the
    tokens of a phrase apart only by what is not a word character."""
    forms = []
    for form in piece.forms:
        parts = [re.escape(part) for part in form.split(" ")]
        if piece.prefix:
            parts[-1] += f"{_WORD_CHAR}*"
        forms.append("[\\W_]+".join(parts))
    return re.compile(f"(?<!{_WORD_CHAR})(?:{'|'.join(forms)})(?!{_WORD_CHAR})")


class _ScoreText:
    """A field of a candidate as the scorer reads it, its lower-cased text: a CJK piece is counted
    in it (a bigram is in the index exactly where its two characters stand together), a word piece
    found by its pattern, at C speed both. Its length is about its tokens: its words apart by
    spaces, and a token per character of three or more bytes in UTF-8 (CJK, which the index cuts into
    bigrams), taken without a pass in Python."""

    def __init__(self, text: str) -> None:
        self.text = text[:SCORE_TEXT_CHARS].lower()
        wide = (len(self.text.encode()) - len(self.text)) // 2
        self.length = len(self.text.split()) + wide

    def occurrences(self, scored: ScoredPiece) -> tuple[int, list[int]]:
        """How often a piece occurs, and about where, in words (words only: a CJK piece's place
        is not kept, since the bigrams of one word always stand together)."""
        if scored.needles is not None:
            return sum(self.text.count(needle) for needle in scored.needles), []
        assert scored.pattern is not None
        found = [match.start() // _CHARS_PER_WORD for match in scored.pattern.finditer(self.text)]
        return len(found), found


def similarity(first: str, second: str) -> float:
    """How alike two texts are, 0 to 1: the cosine of their word (and CJK bigram) counts."""
    a, b = Counter(score_tokens(first)), Counter(score_tokens(second))
    if not a or not b:
        return 0.0
    dot = sum(count * b[token] for token, count in a.items())
    return dot / math.sqrt(sum(c * c for c in a.values()) * sum(c * c for c in b.values()))


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


# --- PostgreSQL: the same tokens as a tsvector, the same expressions as a tsquery -------------
#
# On the team database ``memory_words`` is a ``tsvector`` column of ``memories`` built here: the
# text ``words_text`` gives, cut the way FTS5's ``unicode61 remove_diacritics 2`` cuts it (letters
# and digits, lower-case, accents dropped). PostgreSQL's own parser never sees the text (its
# rules and the server locale would split CJK differently). The FTS5 expressions the store and
# preload build are translated (``ts_query``), so both backends answer the same queries.

_TOKEN = re.compile(r"[^\W_]+")
#: PostgreSQL keeps positions up to 16,383 and lexemes under 2 KiB: longer words are cut at 500
#: characters (under 2 KiB in any script) on both sides, so they still match.
MAX_TS_POSITION = 16_383
MAX_TS_TOKEN = 500
#: A tsvector holds at most 1 MiB: a memory's distinct tokens are indexed in text order until
#: about this many bytes, each with at most TS_POSITIONS_KEPT positions. Longer memories (a
#: 2,000,000-character one) are found by every token of their first ~900 KB of distinct tokens.
TS_VECTOR_BUDGET = 900_000
TS_POSITIONS_KEPT = 16
#: Weights by field, as the BM25 weights of the SQLite index (path 4, disclosure 2, content 1).
TS_FIELD_WEIGHTS = {"path": "A", "disclosure": "B", "content": "D"}


def _fold(text: str) -> str:
    """Lower-case without accents, as FTS5's ``remove_diacritics`` does."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def index_tokens(text: str) -> list[str]:
    """The tokens ``memory_words`` holds for a text, in order."""
    return [token[:MAX_TS_TOKEN] for token in _TOKEN.findall(_fold(words_text(text)))]


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def ts_vector(path: str, content: str, disclosure: str) -> str:
    """The ``tsvector`` literal of a memory: each field's tokens with positions and its weight."""
    return ts_vector_literal(ts_entries(path, content, disclosure))


def ts_vector_literal(entries: dict[str, list[str]]) -> str:
    return " ".join(
        f"{_lexeme(token)}:{','.join(dict.fromkeys(places))}" for token, places in entries.items()
    )


def ts_entries(path: str, content: str, disclosure: str) -> dict[str, list[str]]:
    """Each token of a memory with its positions and weights (``12A``), in text order, capped.

    Fields follow each other with a gap of positions, so no phrase spans two of them.
    """
    entries: dict[str, list[str]] = {}
    size = 0
    position = 0
    for name, text in (("path", path), ("disclosure", disclosure), ("content", content)):
        weight = TS_FIELD_WEIGHTS[name]
        for token in index_tokens(text):
            position += 1
            places = entries.get(token)
            if places is None:
                if size > TS_VECTOR_BUDGET:
                    continue
                places = entries[token] = []
                size += len(token.encode()) + 8
            if len(places) < TS_POSITIONS_KEPT:
                places.append(f"{min(position, MAX_TS_POSITION)}{weight}")
                size += 2
        position += 10
    return entries


_FTS_TOKEN = re.compile(r'\s*(?:"((?:[^"]|"")*)"|(\()|(\))|(\*)|(AND|OR)\b|(\{?\w+\}?)\s*:)')


@dataclass
class _Node:
    kind: str  # "phrase", "and", "or"
    text: str = ""
    prefix: bool = False
    column: str | None = None
    children: list[_Node] = field(default_factory=list)


def parse_expression(expression: str) -> _Node:
    """The subset of FTS5 query syntax this plugin writes: string literals (``*`` for a prefix),
    parentheses, AND, OR (AND binds tighter) and a column filter (``content : ...``)."""
    items: list[tuple[str, str]] = []
    position = 0
    while position < len(expression):
        if not expression[position:].strip():
            break
        match = _FTS_TOKEN.match(expression, position)
        if match is None:
            raise ValueError(
                f"unexpected FTS5 syntax at {position}: {expression[position : position + 20]!r}"
            )
        position = match.end()
        literal, opening, closing, star, operator, column = match.groups()
        if literal is not None:
            items.append(("phrase", literal.replace('""', '"')))
        elif opening:
            items.append(("(", ""))
        elif closing:
            items.append((")", ""))
        elif star:
            items.append(("*", ""))
        elif operator:
            items.append((operator, ""))
        else:
            items.append(("column", column.strip("{}")))
    index = 0

    def peek() -> str | None:
        return items[index][0] if index < len(items) else None

    def take() -> tuple[str, str]:
        nonlocal index
        index += 1
        return items[index - 1]

    def primary(column: str | None) -> _Node:
        kind, text = take()
        if kind == "column":
            return primary(text)
        if kind == "(":
            node = disjunction(column)
            take()
            return node
        prefix = peek() == "*"
        if prefix:
            take()
        return _Node("phrase", text, prefix, column)

    def conjunction(column: str | None) -> _Node:
        parts = [primary(column)]
        while peek() == "AND":
            take()
            parts.append(primary(column))
        return parts[0] if len(parts) == 1 else _Node("and", children=parts)

    def disjunction(column: str | None) -> _Node:
        parts = [conjunction(column)]
        while peek() == "OR":
            take()
            parts.append(conjunction(column))
        return parts[0] if len(parts) == 1 else _Node("or", children=parts)

    return disjunction(None)


def ts_query(expression: str) -> str | None:
    """The ``tsquery`` literal matching what an FTS5 ``memory_words`` expression matches (None:
    it holds no token, so it matches nothing)."""

    def render(node: _Node) -> str | None:
        if node.kind == "phrase":
            tokens = [t[:MAX_TS_TOKEN] for t in _TOKEN.findall(_fold(node.text))]
            if not tokens:
                return None
            weight = TS_FIELD_WEIGHTS.get(node.column or "", "")
            marks = [f":{weight}" if weight else ""] * len(tokens)
            if node.prefix:
                marks[-1] = f":*{weight}"
            phrase = " <-> ".join(_lexeme(t) + m for t, m in zip(tokens, marks, strict=True))
            return f"({phrase})" if len(tokens) > 1 else phrase
        parts = [render(child) for child in node.children]
        if node.kind == "and":
            if any(p is None for p in parts):
                return None
            return "(" + " & ".join(p for p in parts if p) + ")"
        kept = [p for p in parts if p]
        return "(" + " | ".join(kept) + ")" if kept else None

    return render(parse_expression(expression))
