"""Finding the memories that fit a working context (a file, a folder, an error, an intent).

Each context becomes a handful of probes, each with a reason a person would accept ("mentions
the file name login.py"); a memory's score is the sum of the weights of the probes it
matched, so a memory naming the exact path beats one that only shares a folder name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hostd import Text
from hostd_memory import search as search_text
from hostd_memory.store import MemoryRow, MemoryStore

PROBE_LIMIT = 30
RESULT_LIMIT = 20
DISCLOSURE_REASON = Text.same("\0disclosure")  # replaced by a sentence naming the disclosure


@dataclass(frozen=True)
class Probe:
    table: str  # "memory_fts" (substring) or "memory_words" (words and bigrams)
    expression: str
    weight: float
    reason: Text  # rendered by the tool in the server's language


def _term_probe(term: str, weight: float, reason: Text) -> Probe | None:
    """A probe for one term: substring when it is long enough, words index when it is short; none for
    a term holding NUL (an FTS5 query is a C string: NUL would end it mid-literal)."""
    if "\x00" in term:
        return None
    if len(term) >= 3:
        return Probe("memory_fts", search_text.fts_literal(term), weight, reason)
    expression = search_text.short_term_expression(term)
    return Probe("memory_words", expression, weight, reason) if expression else None


def _shared_words_probe(text: str, reason: Text) -> Probe | None:
    """The weakest probe: memories sharing any of ``text``'s words (none when it has no word)."""
    expression = search_text.relaxed_expression(text)
    return Probe("memory_words", expression, 1.0, reason) if expression else None


def _path_probes(data: str, *, is_directory: bool) -> tuple[list[Probe], list[str]]:
    """Probes for a path, most specific first; each term once, however often the path repeats it
    (``hostd/src/hostd``, or the stem ``cli`` of ``cli/cli.py``), so no reason or score counts twice."""
    parts = search_text.path_terms(data, is_directory=is_directory)
    probes: list[Probe] = []
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str, weight: float, reason: Text) -> None:
        if term.lower() in seen:
            return
        seen.add(term.lower())
        terms.append(term)
        probe = _term_probe(term, weight, reason)
        if probe is not None:
            probes.append(probe)

    add(parts.full, 4.0, Text(en=f"mentions the path {parts.full}", zh=f"提到路径 {parts.full}"))
    if parts.tail:
        add(parts.tail, 3.0, Text(en=f"mentions {parts.tail}", zh=f"提到 {parts.tail}"))
    if parts.name:
        add(parts.name, 2.0, Text(en=f"mentions the file name {parts.name}", zh=f"提到文件名 {parts.name}"))
    if parts.stem and len(parts.stem) >= 3:
        add(parts.stem, 1.5, Text(en=f"mentions {parts.stem}", zh=f"提到 {parts.stem}"))
    for folder in parts.folders:
        add(folder, 1.0, Text(en=f"mentions the folder {folder}", zh=f"提到文件夹 {folder}"))
    return probes, terms


def _error_probes(data: str) -> tuple[list[Probe], list[str]]:
    terms = search_text.error_key_terms(data)
    probes: list[Probe] = []
    for term in terms:
        # Error names and codes (ModuleNotFoundError, ECONNREFUSED, E11000) are the strongest clues.
        if not search_text.is_cjk(term) and (
            any(c.isupper() for c in term[1:]) or "_" in term or term.isupper()
        ):
            probe = _term_probe(term, 2.0, Text(en=f"mentions {term}", zh=f"提到 {term}"))
            if probe:
                probes.append(probe)
    shared = _shared_words_probe(
        " ".join(terms), Text(en="shares terms with the error", zh="与错误信息有相同的词")
    )
    if shared is not None:
        probes.append(shared)
    return probes, terms


def _intent_probes(data: str) -> tuple[list[Probe], list[str]]:
    terms = search_text.split_terms(data)
    probes: list[Probe] = []
    long_terms = [t for t in terms if len(t) >= 3]
    if len(long_terms) > 1:
        probes.append(
            Probe(
                "memory_fts",
                " AND ".join(search_text.fts_literal(t) for t in long_terms),
                2.0,
                Text(en="mentions every word of the intent", zh="包含意图中的每个词"),
            )
        )
    shared = _shared_words_probe(data, Text(en="shares words with the intent", zh="与意图有相同的词"))
    if shared is not None:
        probes.append(shared)
    return probes, terms


def _disclosure_probe(terms: Iterable[str]) -> Probe | None:
    expression = search_text.relaxed_expression(" ".join(terms))
    if not expression:
        return None
    return Probe("memory_words", f"{{disclosure}} : ({expression})", 1.5, DISCLOSURE_REASON)


def related_memories(
    store: MemoryStore, context_type: str, data: str, *, exclude: set[int]
) -> tuple[list[tuple[MemoryRow, list[Text]]], list[str]]:
    """Memories fitting the context, best first, each with its reasons; and the terms looked for."""
    if context_type in ("file", "directory"):
        probes, terms = _path_probes(data, is_directory=context_type == "directory")
        disclosure_terms = [t for t in terms[1:] if "/" not in t] or terms
    elif context_type == "error":
        probes, terms = _error_probes(data)
        disclosure_terms = terms
    else:
        probes, terms = _intent_probes(data)
        disclosure_terms = terms
    disclosure = _disclosure_probe(disclosure_terms)
    if disclosure:
        probes.append(disclosure)
    scores: dict[int, float] = {}
    reasons: dict[int, list[Text]] = {}
    for probe in probes:
        for memory_id, _ in store.match_ids(probe.table, probe.expression, PROBE_LIMIT):
            if memory_id in exclude:
                continue
            scores[memory_id] = scores.get(memory_id, 0.0) + probe.weight
            reasons.setdefault(memory_id, []).append(probe.reason)
    if not scores:
        return [], terms
    memories = store.memories_for(list(scores))
    ranked = sorted(scores, key=lambda i: (-scores[i], memories[i].priority if i in memories else 10))
    found = [(memories[i], reasons[i]) for i in ranked[:RESULT_LIMIT] if i in memories]
    for memory, why in found:
        if DISCLOSURE_REASON in why:
            why[why.index(DISCLOSURE_REASON)] = Text(
                en=f"its disclosure fits this context: {memory.disclosure}",
                zh=f"其触发条件与此情境相符：{memory.disclosure}",
            )
    return found, terms
