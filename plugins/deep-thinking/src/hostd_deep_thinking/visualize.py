"""Diagrams of a session: a Mermaid flowchart and an ASCII chart.

Mermaid: regular thoughts chained in order, revisions as dashed arrows to the thought they
revise, each branch its own subgraph hanging off its origin, references to missing labels
drawn to a dashed placeholder. Labels are quoted, and the few characters Mermaid reads inside
a quoted label are entity-encoded, so no thought text can end a label or inject syntax or
markup, while the rest (CJK punctuation included) stays readable in the source.
ASCII follows the spec's notation: ``[n]`` for a thought,
``<->`` for a revision, ``|->`` for a branch. Both are drawn in the server's language: the
words on them (headings, "revision", "branch", "missing") are the document's, like an export's.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from hostd_deep_thinking.export import Say, branch_groups, main_line, status_words, visible, words_in
from hostd_deep_thinking.store import SessionState

LABEL_CHARS = 60
ASCII_TEXT_CHARS = 64
_SPACES = re.compile(r"\s+")


def excerpt(text: str, limit: int) -> str:
    flat = _SPACES.sub(" ", visible(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


#: What Mermaid reads inside a quoted label: '"' ends it, '#' starts an entity code, '<' '>' '&'
#: are HTML in the rendered label, '`' starts a Markdown string, '|' ends an edge label.
_MERMAID_CODES = {
    '"': "#quot;",
    "#": "#35;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "`": "#96;",
    "|": "#124;",
}


def mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label, still readable: only the characters Mermaid reads
    there are written as ``#code;``, with '%' when next to another (``%%`` starts a comment or an
    ``%%{init}%%`` directive anywhere in the source) and anything unprintable; CJK punctuation and
    other ASCII stay as they are."""
    out = []
    for index, char in enumerate(text):
        code = _MERMAID_CODES.get(char)
        if code is not None:
            out.append(code)
        elif char == "%" and "%" in text[max(0, index - 1) : index] + text[index + 1 : index + 2]:
            out.append("#37;")
        elif not char.isprintable():
            out.append(f"#{ord(char)};")
        else:
            out.append(char)
    return "".join(out)


def label_suffix(thought: dict[str, Any]) -> str:
    """' [analysis #risk #cost]' for a thought with a stage or tags; '' otherwise (no change)."""
    words = [excerpt(str(thought["stage"]), 24)] if thought.get("stage") else []
    words += [f"#{excerpt(str(tag), 16)}" for tag in thought.get("tags") or []]
    return f" [{' '.join(words)}]" if words else ""


def _node_label(thought: dict[str, Any], say: Say) -> str:
    kind = {"revision": " " + say(en="revision", zh="修订"), "branch": ""}.get(str(thought["type"]), "")
    head = f"{thought['thought_number']}{kind}{label_suffix(thought)}"
    return mermaid_text(f"{head}: {excerpt(str(thought['content']), LABEL_CHARS)}")


def to_mermaid(state: SessionState, language: str) -> str:
    say = words_in(language)
    missing_word = say(en="missing", zh="缺失")
    lines = ["flowchart TD"]
    dangling = 0

    def node(thought: dict[str, Any], indent: str = "    ") -> None:
        css = {"revision": ":::revision", "branch": ":::branch"}.get(str(thought["type"]), "")
        lines.append(f'{indent}t{thought["seq"]}["{_node_label(thought, say)}"]{css}')

    def missing(label: Any) -> str:
        nonlocal dangling
        dangling += 1
        name = f"m{dangling}"
        lines.append(f'    {name}(["{mermaid_text(f"{label} ({missing_word})")}"]):::dangling')
        return name

    main = main_line(state)
    for thought in main:
        node(thought)
    for before, after in itertools.pairwise(main):
        lines.append(f"    t{before['seq']} --> t{after['seq']}")
    for index, (branch_id, thoughts) in enumerate(branch_groups(state), start=1):
        lines.append(
            f'    subgraph b{index}["{mermaid_text(say(en=f"branch {branch_id}", zh=f"分支 {branch_id}"))}"]'
        )
        for thought in thoughts:
            node(thought, "        ")
        for before, after in itertools.pairwise(thoughts):
            lines.append(f"        t{before['seq']} --> t{after['seq']}")
        lines.append("    end")
        origin = thoughts[0].get("branch_from_seq")
        source = f"t{origin}" if origin is not None else missing(thoughts[0].get("branch_from_thought"))
        lines.append(f"    {source} --> t{thoughts[0]['seq']}")
    for thought in state.thoughts:
        if not thought.get("is_revision"):
            continue
        target = thought.get("revises_seq")
        name = f"t{target}" if target is not None else missing(thought.get("revises_thought"))
        lines.append(f"    t{thought['seq']} -.->|{mermaid_text(say(en='revises', zh='修订'))}| {name}")
    lines += [
        "    classDef revision fill:#fff7ed,stroke:#c2410c,color:#1f2933",
        "    classDef branch fill:#ecfdf5,stroke:#047857,color:#1f2933",
        "    classDef dangling fill:#f5f7fa,stroke:#9aa5b1,stroke-dasharray:4 4,color:#616e7c",
    ]
    return "\n".join(lines) + "\n"


def to_ascii(state: SessionState, language: str) -> str:
    say = words_in(language)
    missing_word = " (" + say(en="missing", zh="缺失") + ")"
    meta = state.meta
    total = meta.get("total_thoughts")
    status = status_words(str(meta.get("status", "active")), say)
    lines = [
        say(en="Session", zh="会话")
        + f": {excerpt(str(meta.get('name', state.session_id)), 70)} [{state.session_id}]",
        say(
            en=f"Status: {status} | thoughts: {len(state.thoughts)} | planned total: {total or '-'}",
            zh=f"状态：{status} | 思考数：{len(state.thoughts)} | 计划总数：{total or '-'}",
        ),
        "",
        say(en="Main line", zh="主线"),
    ]

    def thought_line(thought: dict[str, Any], indent: str) -> str:
        text = excerpt(str(thought["content"]), ASCII_TEXT_CHARS) + label_suffix(thought)
        if thought.get("is_revision"):
            missing = missing_word if thought.get("revises_seq") is None else ""
            target = thought.get("revises_thought")
            revises = say(en="revises", zh="修订")
            return f"{indent}[{thought['thought_number']}'] {text}  <-> {revises} [{target}]{missing}"
        return f"{indent}[{thought['thought_number']}] {text}"

    def chain(thoughts: list[dict[str, Any]], indent: str) -> None:
        for position, thought in enumerate(thoughts):
            if position:
                lines.append(f"{indent} |")
            lines.append(thought_line(thought, indent))

    main = main_line(state)
    if main:
        chain(main, "  ")
    else:
        lines.append("  " + say(en="(no thoughts)", zh="（尚无思考）"))
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        dangling = missing_word if thoughts[0].get("branch_from_seq") is None else ""
        lines += ["", say(en="Branch", zh="分支") + f" {branch_id}: [{origin}]{dangling} |-> [{branch_id}]"]
        chain(thoughts, "  ")
    if state.adjustments:
        lines += ["", say(en="Adjustments", zh="总数调整")]
        reasons = {
            "needs_more_thoughts": say(en="needs_more_thoughts", zh="需要更多思考"),
            "thought_number_exceeds_total": say(en="thought_number_exceeds_total", zh="思考编号超过总数"),
            "client_raised_total": say(en="client_raised_total", zh="客户端调高总数"),
        }
        for item in state.adjustments:
            reason = reasons.get(str(item["reason"]), str(item["reason"]))
            lines.append(
                say(
                    en=f"  #{item['sequence']}: total {item['from_total']} -> {item['to_total']} ({reason})",
                    zh=f"  #{item['sequence']}：总数 {item['from_total']} -> {item['to_total']}（{reason}）",
                )
            )
    return "\n".join(lines) + "\n"
