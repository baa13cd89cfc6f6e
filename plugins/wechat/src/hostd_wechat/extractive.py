"""Extractive summaries: sentences scored by TF-IDF over the whole set, with a small position prior.

No model and no API key: every article is split into sentences (Chinese 。！？； and English
.!?; with closing quotes and brackets kept on their sentence), sentences are tokenised
(Latin words less stop words, CJK character bigrams), a term weighs its frequency in the
article times its inverse document frequency across the set, and a sentence scores the mean
weight of its distinct terms, nudged up slightly near the article's start. The styles then
pick from the ranked sentences: whole sentences before labels and list entries, each text once.

Before any of that, what is not the article's prose is left out: link lists and URL-only
lines (footnotes, "further reading"), page chrome such as 展开 or 阅读原文, and blocks such as
往期推荐 or References.

Tokens are interned to integer ids and kept in compact arrays, so a thousand articles fit in
little memory.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from hostd_errors.stopwords import ENGLISH_STOP_WORDS

_SENTENCE_END = re.compile(
    r"""(?:[。！？；!?;]+|\.(?=\s|$)|…{1,2}(?=\s|$))[”’"'」』）)\]】》]*\s*""",
)
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*|\d+(?:\.\d+)?")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# The shared English stop words, and the digest's own: fillers and negations that pick no sentence.
_STOP_WORDS = ENGLISH_STOP_WORDS | frozenset(
    {"but", "just", "more", "most", "no", "not", "out", "those", "too", "up"}
)
# Sentences shorter than this (in characters) are headings, captions or fragments, not summary material.
_MIN_SENTENCE_CHARS = 8
# A line without sentence-ending punctuation shorter than this is a label or list entry, not a sentence.
_MIN_UNPUNCTUATED_CHARS = 25
# A line holding links or URLs is a link list (footnotes, "further reading") when fewer letters than
# this are left once the links, URLs and footnote markers are taken out.
_MIN_TEXT_BESIDE_LINKS = 12
_POSITION_PRIOR = 0.15

# Page chrome: whole lines (compared without punctuation, spaces or case) that WeChat or the
# account adds around every article. They say nothing about the article.
_CHROME_LINES = frozenset(
    [
        "展开",
        "收起",
        "阅读原文",
        "轻触阅读原文",
        "点击阅读原文",
        "点击上方蓝字关注我们",
        "点击蓝字关注我们",
        "关注我们",
        "点个在看",
        "点赞",
        "在看",
        "分享",
        "收藏",
        "写留言",
        "留言",
        "完",
        "end",
        "theend",
        "预览时标签不可点",
        "微信扫一扫关注该公众号",
        "微信扫一扫可打开此内容使用完整服务",
        "继续滑动看下一个",
        "向上滑动看下一个",
        "readmore",
    ]
)
# Headings (or lines standing alone) that open a block of links to other articles or references:
# everything from them to the next heading of the same or a higher level is left out.
_CHROME_SECTIONS = frozenset(
    [
        "往期推荐",
        "往期回顾",
        "往年回顾",
        "往期精选",
        "往期文章",
        "推荐阅读",
        "相关阅读",
        "延伸阅读",
        "精彩推荐",
        "热门推荐",
        "历史文章",
        "参考链接",
        "参考资料",
        "相关链接",
        "references",
        "relatedarticles",
        "furtherreading",
    ]
)
_URL = re.compile(r"(?:https?|mailto|ftp):[^\s)>\]*`]+", re.IGNORECASE)
_FOOTNOTE = re.compile(r"\[\d{1,3}\]|[（(]#\d{1,4}[）)]")
_NOT_LETTERS = re.compile(r"[\W_]+")
_SENTENCE_FINAL = re.compile(r"[。！？；!?;.…][”’\"'」』）)\]】》]*$")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; line breaks end sentences too (headings, list items)."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            piece = line[start : match.end()].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences


def tokens(sentence: str) -> list[str]:
    """Latin words (lower case, no stop words) and CJK character bigrams (single characters alone)."""
    found = [w.lower() for w in _LATIN_WORD.findall(sentence)]
    found = [w for w in found if w not in _STOP_WORDS and len(w) > 1]
    for run in _CJK_RUN.findall(sentence):
        if len(run) == 1:
            found.append(run)
        else:
            found.extend(run[i : i + 2] for i in range(len(run) - 1))
    return found


def cjk_share(text: str) -> float:
    """Share of CJK characters among letters: decides the digest's language when asked for auto."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = sum(len(w) for w in _LATIN_WORD.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


@dataclass
class Section:
    """A heading of the article and the indexes of the sentences under it."""

    heading: str
    sentence_indexes: list[int] = field(default_factory=list)


@dataclass
class ArticleText:
    """One article's sentences (plain text), its sections, and its sentences' token ids."""

    sentences: list[str]
    sections: list[Section]
    sentence_tokens: list[array[int]] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)

    def ranked(self) -> list[int]:
        """Sentence indexes, best first (ties keep document order); a repeated sentence counts once.

        Whole sentences come first: labels and list entries (short, no closing punctuation) and
        very short pieces are only used when the article has nothing else.
        """
        whole = [i for i in range(len(self.sentences)) if is_whole_sentence(self.sentences[i])]
        eligible = whole or [i for i, s in enumerate(self.sentences) if len(s) >= _MIN_SENTENCE_CHARS]
        if not eligible:
            eligible = list(range(len(self.sentences)))
        seen: set[str] = set()
        ranked = []
        for index in sorted(eligible, key=lambda i: (-self.scores[i], i)):
            key = _letters(self.sentences[index])
            if key not in seen:
                seen.add(key)
                ranked.append(index)
        return ranked


def is_whole_sentence(sentence: str) -> bool:
    """Long enough to carry a statement, and not a bare label (short with no closing punctuation)."""
    if len(sentence) < _MIN_SENTENCE_CHARS:
        return False
    return bool(_SENTENCE_FINAL.search(sentence)) or len(sentence) >= _MIN_UNPUNCTUATED_CHARS


_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(
    r"(^\s{0,3}(?:[-*+]|\d+[.)])\s+|^\s{0,3}>\s?|[*_`~]{1,3}|<[^>]{1,200}>|^\s*\|?[-:| ]{3,}\|?\s*$)"
)


def _letters(text: str) -> str:
    return _NOT_LETTERS.sub("", text).lower()


def is_link_line(raw: str) -> bool:
    """A Markdown line that is only links, URLs and footnote markers (a link list or a footnote)."""
    if not (_LINK.search(raw) or _URL.search(raw)):
        return False
    rest = _URL.sub("", _LINK.sub("", _IMAGE.sub("", raw)))
    return len(_letters(_FOOTNOTE.sub("", rest))) < _MIN_TEXT_BESIDE_LINKS


def is_chrome_line(text: str) -> bool:
    """Page chrome such as 展开, 阅读原文 or "- END -" (``text`` already cleaned of markup)."""
    return _letters(text) in _CHROME_LINES


def opens_chrome_section(text: str) -> bool:
    """A heading such as 往期推荐 or References, whose block lists other articles or links."""
    return _letters(text) in _CHROME_SECTIONS


def markdown_text(body: str) -> tuple[list[tuple[int, str]], str]:
    """Headings (level, text) and the plain prose of a Markdown body.

    Code blocks, images, link lists, URL-only lines, page chrome (展开, 阅读原文, ...) and
    blocks such as 往期推荐 or References (up to the next heading of their level) are left out.
    """
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    in_code = False
    skipping_below: int | None = None  # inside a chrome block opened by a heading of this level
    for line in body.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            text = _clean_inline(heading.group(2))
            if skipping_below is not None and level > skipping_below:
                continue
            skipping_below = level if opens_chrome_section(text) else None
            if text and skipping_below is None:
                headings.append((level, text))
                lines.append(f"\x00{len(headings) - 1}")
            continue
        if skipping_below is not None or is_link_line(line):
            continue
        cleaned = _clean_inline(line).replace("|", " ")
        if opens_chrome_section(cleaned):
            skipping_below = 7  # a chrome block without a heading: up to the next heading of any level
            continue
        if not is_chrome_line(cleaned):
            lines.append(cleaned)
    return headings, "\n".join(lines)


def _clean_inline(text: str) -> str:
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _MARKUP.sub("", text)
    return " ".join(_FOOTNOTE.sub("", text).split())


def article_text(body: str, title: str) -> ArticleText:
    """Sentences and sections of one Markdown body (the title heading itself is not a section)."""
    headings, prose = markdown_text(body)
    sentences: list[str] = []
    sections: list[Section] = [Section(heading="")]
    for line in prose.split("\n"):
        if line.startswith("\x00"):
            level_text = headings[int(line[1:])]
            if level_text[1].strip() != title.strip() or len(sections) > 1 or sections[0].sentence_indexes:
                sections.append(Section(heading=level_text[1]))
            continue
        for sentence in split_sentences(line):
            sections[-1].sentence_indexes.append(len(sentences))
            sentences.append(sentence)
    return ArticleText(sentences=sentences, sections=[s for s in sections if s.heading or s.sentence_indexes])


def score_articles(articles: list[ArticleText]) -> None:
    """Fill every article's sentence scores (TF-IDF over the set, plus the position prior)."""
    vocabulary: dict[str, int] = {}
    document_frequency: Counter[int] = Counter()
    for article in articles:
        seen: set[int] = set()
        for sentence in article.sentences:
            ids = array("I", (vocabulary.setdefault(t, len(vocabulary)) for t in tokens(sentence)))
            article.sentence_tokens.append(ids)
            seen.update(ids)
        document_frequency.update(seen)
    total = len(articles)
    idf = {term: math.log((1 + total) / (1 + df)) + 1.0 for term, df in document_frequency.items()}
    for article in articles:
        frequency: Counter[int] = Counter()
        for ids in article.sentence_tokens:
            frequency.update(ids)
        weight = {term: count * idf[term] for term, count in frequency.items()}
        count = max(1, len(article.sentences))
        for index, ids in enumerate(article.sentence_tokens):
            distinct = set(ids)
            # Dividing by the square root of the length neither favours long sentences (a plain sum)
            # nor short ones with a single rare word (a mean).
            base = sum(weight[t] for t in distinct) / math.sqrt(len(distinct)) if distinct else 0.0
            prior = 1.0 + _POSITION_PRIOR * (1.0 - index / count)
            article.scores.append(base * prior)
        article.sentence_tokens = []  # done with them: keep memory flat across a large set


def _join(sentences: Iterable[str], language: str) -> str:
    glue = "" if language == "zh" else " "
    return glue.join(sentences).strip()


def _top(article: ArticleText, count: int) -> list[int]:
    return sorted(article.ranked()[:count])


def key_points(article: ArticleText, count: int | None = None) -> str:
    """The best sentences as bullets: about one in four, between two and five."""
    if count is None:
        count = max(2, min(5, math.ceil(len(article.sentences) / 4)))
    chosen = _top(article, count)
    return "\n".join(f"- {article.sentences[i]}" for i in chosen)


def narrative(article: ArticleText, language: str, count: int = 3) -> str:
    return _join((article.sentences[i] for i in _top(article, count)), language)


def brief(article: ArticleText, language: str) -> str:
    ranked = article.ranked()
    if not ranked:
        return ""
    chosen = [ranked[0]]
    if len(article.sentences[ranked[0]]) < 60 and len(ranked) > 1:
        chosen.append(ranked[1])
    return _join((article.sentences[i] for i in sorted(chosen)), language)


def outline(article: ArticleText, language: str) -> str:
    """The article's own headings, each with its best whole sentence; key points when it has none."""
    headed = [s for s in article.sections if s.heading]
    if not headed:
        return key_points(article)
    lines = []
    for section in article.sections:
        # A section holding only labels or list entries (a table, a list of names) shows its heading alone.
        whole = [i for i in section.sentence_indexes if is_whole_sentence(article.sentences[i])]
        best = max(whole, key=lambda i: (article.scores[i], -i), default=None)
        if section.heading:
            lines.append(
                f"- **{section.heading}**" + (f": {article.sentences[best]}" if best is not None else "")
            )
        elif best is not None:
            lines.append(f"- {article.sentences[best]}")
    return "\n".join(lines)


def summarize(article: ArticleText, style: str, language: str) -> str:
    if not article.sentences:
        return ""
    if style == "outline":
        return outline(article, language)
    if style == "narrative":
        return narrative(article, language)
    if style == "brief":
        return brief(article, language)
    return key_points(article)
