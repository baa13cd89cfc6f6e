"""Diagrams of a session: a Mermaid flowchart and an ASCII chart.

Mermaid: regular thoughts chained in order, revisions as dashed arrows to the thought they
revise, each branch its own subgraph hanging off its origin, references to missing labels
drawn to a dashed placeholder. Every label is entity-encoded, so no thought text can end a
label or inject syntax. ASCII follows the spec's notation: ``[n]`` for a thought,
``<->`` for a revision, ``|->`` for a branch.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from hostd_deep_thinking.export import branch_groups, main_line, visible
from hostd_deep_thinking.store import SessionState

LABEL_CHARS = 60
ASCII_TEXT_CHARS = 64
_SPACES = re.compile(r"\s+")


def excerpt(text: str, limit: int) -> str:
    flat = _SPACES.sub(" ", visible(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: anything but letters, digits and spaces as ``#code;``."""
    out = []
    for char in text:
        if char == " " or (char.isascii() and char.isalnum()) or (not char.isascii() and char.isalnum()):
            out.append(char)
        else:
            out.append(f"#{ord(char)};")
    return "".join(out)


def label_suffix(thought: dict[str, Any]) -> str:
    """' [analysis #risk #cost]' for a thought with a stage or tags; '' otherwise (no change)."""
    words = [excerpt(str(thought["stage"]), 24)] if thought.get("stage") else []
    words += [f"#{excerpt(str(tag), 16)}" for tag in thought.get("tags") or []]
    return f" [{' '.join(words)}]" if words else ""


def _node_label(thought: dict[str, Any]) -> str:
    kind = {"revision": " revision", "branch": ""}.get(str(thought["type"]), "")
    head = f"{thought['thought_number']}{kind}{label_suffix(thought)}"
    return mermaid_text(f"{head}: {excerpt(str(thought['content']), LABEL_CHARS)}")


def to_mermaid(state: SessionState) -> str:
    lines = ["flowchart TD"]
    dangling = 0

    def node(thought: dict[str, Any], indent: str = "    ") -> None:
        css = {"revision": ":::revision", "branch": ":::branch"}.get(str(thought["type"]), "")
        lines.append(f'{indent}t{thought["seq"]}["{_node_label(thought)}"]{css}')

    def missing(label: Any) -> str:
        nonlocal dangling
        dangling += 1
        name = f"m{dangling}"
        lines.append(f'    {name}(["{mermaid_text(f"{label} (missing)")}"]):::dangling')
        return name

    main = main_line(state)
    for thought in main:
        node(thought)
    for before, after in itertools.pairwise(main):
        lines.append(f"    t{before['seq']} --> t{after['seq']}")
    for index, (branch_id, thoughts) in enumerate(branch_groups(state), start=1):
        lines.append(f'    subgraph b{index}["{mermaid_text(f"branch {branch_id}")}"]')
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
        lines.append(f"    t{thought['seq']} -.->|revises| {name}")
    lines += [
        "    classDef revision fill:#fff7ed,stroke:#c2410c,color:#1f2933",
        "    classDef branch fill:#ecfdf5,stroke:#047857,color:#1f2933",
        "    classDef dangling fill:#f5f7fa,stroke:#9aa5b1,stroke-dasharray:4 4,color:#616e7c",
    ]
    return "\n".join(lines) + "\n"


def to_ascii(state: SessionState) -> str:
    meta = state.meta
    total = meta.get("total_thoughts")
    lines = [
        f"Session: {excerpt(str(meta.get('name', state.session_id)), 70)} [{state.session_id}]",
        f"Status: {meta.get('status', 'active')} | thoughts: {len(state.thoughts)} "
        f"| planned total: {total or '-'}",
        "",
        "Main line",
    ]

    def thought_line(thought: dict[str, Any], indent: str) -> str:
        text = excerpt(str(thought["content"]), ASCII_TEXT_CHARS) + label_suffix(thought)
        if thought.get("is_revision"):
            missing = " (missing)" if thought.get("revises_seq") is None else ""
            target = thought.get("revises_thought")
            return f"{indent}[{thought['thought_number']}'] {text}  <-> revises [{target}]{missing}"
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
        lines.append("  (no thoughts)")
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        dangling = " (missing)" if thoughts[0].get("branch_from_seq") is None else ""
        lines += ["", f"Branch {branch_id}: [{origin}]{dangling} |-> [{branch_id}]"]
        chain(thoughts, "  ")
    if state.adjustments:
        lines += ["", "Adjustments"]
        for item in state.adjustments:
            lines.append(
                f"  #{item['sequence']}: total {item['from_total']} -> {item['to_total']} ({item['reason']})"
            )
    return "\n".join(lines) + "\n"
