"""Session documents turned into files people and programs read: JSON, Markdown, HTML, text.

The JSON export is the whole session with a format version, and ``parse_import`` reads it
back (or a bare session document in the spec's shape). The HTML page is self-contained,
forbids scripts by its Content-Security-Policy, escapes every piece of session text and
renders thoughts as Markdown with raw HTML escaped and unsafe links left as text.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable
from typing import Annotated, Any

from markdown_it import MarkdownIt
from pydantic import BaseModel, Field, ValidationError

from hostd_deep_thinking.jsonshape import MAX_NESTING, shape_problem
from hostd_deep_thinking.models import (
    BRANCH_ID_PATTERN,
    MAX_STAGE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THOUGHT_CHARS,
    MAX_THOUGHTS,
    MEMBER_NAME_PATTERN,
    SESSION_ID_PATTERN,
)
from hostd_deep_thinking.store import FORMAT_VERSION, SessionState, utc_now

EXPORT_FORMAT = "hostd-deep-thinking-session"
Text = Callable[..., str]
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

HTML_CSP = (
    "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def visible(text: str) -> str:
    """Text without control characters (they have no place in a document meant for reading)."""
    return _CONTROL.sub("\ufffd", text)


# --- grouping shared by every readable format -----------------------------------------


def in_branch(thought: dict[str, Any]) -> bool:
    return bool(thought.get("branch_id")) and thought.get("branch_from_thought") is not None


def main_line(state: SessionState) -> list[dict[str, Any]]:
    return [thought for thought in state.thoughts if not in_branch(thought)]


def branch_groups(state: SessionState) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for thought in state.thoughts:
        if in_branch(thought):
            groups.setdefault(str(thought["branch_id"]), []).append(thought)
    return list(groups.items())


# --- JSON ------------------------------------------------------------------------------


def to_json(state: SessionState) -> str:
    payload = {
        "format": EXPORT_FORMAT,
        "format_version": FORMAT_VERSION,
        "exported_at": utc_now(),
        "session": state.to_document(),
    }
    return json.dumps(payload, ensure_ascii=False, indent=2)


# --- Markdown --------------------------------------------------------------------------


_BACKTICKS = re.compile(r"`+")


@functools.cache
def markdown_renderer() -> MarkdownIt:
    """CommonMark plus tables and strikethrough, safe for session text in a page.

    Raw HTML is escaped (``html`` off), markdown-it's link check drops ``javascript:``,
    ``vbscript:``, ``file:`` and ``data:`` targets (they stay text), and images are off:
    the page is self-contained and loads nothing.
    """
    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    renderer.enable(["table", "strikethrough"])
    renderer.disable("image")
    return renderer


def _outside_code_spans(chunk: str, change: Callable[[str], str]) -> str:
    """``change`` applied to the chunk except inside inline code spans (backtick runs of equal length)."""
    parts = []
    position = 0
    while (opening := _BACKTICKS.search(chunk, position)) is not None:
        width = len(opening.group())
        runs = _BACKTICKS.finditer(chunk, opening.end())
        closing = next((run for run in runs if len(run.group()) == width), None)
        if closing is None:
            parts.append(change(chunk[position : opening.end()]))
            position = opening.end()
            continue
        parts.append(change(chunk[position : opening.start()]))
        parts.append(chunk[opening.start() : closing.end()])
        position = closing.end()
    parts.append(change(chunk[position:]))
    return "".join(parts)


def _md(text: str) -> str:
    """Session text (Markdown itself) inside the Markdown export: raw HTML neutralised, code as written.

    Only ``<`` outside code becomes ``&lt;`` (no tag or autolink gets through); fenced and
    indented code blocks and inline code spans keep every character, since entities are not
    decoded there.
    """
    # Lines as markdown-it counts them (only \n, after it normalises \r\n and \r).
    text = visible(text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    verbatim = [False] * len(lines)
    for token in markdown_renderer().parse(text):
        if token.type in ("fence", "code_block") and token.map:
            start, end = token.map[0], min(token.map[1], len(lines))
            verbatim[start:end] = [True] * (end - start)
    out: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        out.append(_outside_code_spans("".join(chunk), lambda part: part.replace("<", "&lt;")))
        chunk.clear()

    for line, keep in zip(lines, verbatim, strict=True):
        if keep:
            flush()
            out.append(line)
        else:
            chunk.append(line)
    flush()
    return "".join(out)


def _reference_words(thought: dict[str, Any], text: Text) -> list[str]:
    words = []
    if thought.get("is_revision"):
        target = thought.get("revises_thought")
        if thought.get("revises_seq") is None:
            words.append(
                text(
                    en=f"revises thought {target} (not in this session)",
                    zh=f"修订思考 {target}（本会话中不存在）",
                )
            )
        else:
            words.append(
                text(
                    en=f"revises thought {target} (#{thought['revises_seq']})",
                    zh=f"修订思考 {target}（#{thought['revises_seq']}）",
                )
            )
    return words


def label_words(thought: dict[str, Any], text: Text) -> str | None:
    """The thought's optional stage and tags as one line ('stage: analysis · tags: risk, cost'), or None."""
    parts = []
    if thought.get("stage"):
        parts.append(f"{text(en='stage', zh='阶段')}: {visible(str(thought['stage']))}")
    if thought.get("tags"):
        parts.append(f"{text(en='tags', zh='标签')}: {', '.join(visible(str(t)) for t in thought['tags'])}")
    return " · ".join(parts) or None


def author_words(thought: dict[str, Any], text: Text) -> str | None:
    """Who added the thought ('by alice'), or None for thoughts from before members were recorded."""
    return text(en=f"by {thought['by']}", zh=f"作者：{thought['by']}") if thought.get("by") else None


def to_markdown(state: SessionState, text: Text) -> str:
    meta = state.meta
    lines = [f"# {_md(str(meta.get('name', state.session_id)))}", ""]
    if meta.get("description"):
        lines += [f"> {_md(str(meta['description']))}".replace("\n", "\n> "), ""]
    lines += [
        f"- **{text(en='Session', zh='会话')}:** `{state.session_id}`",
        f"- **{text(en='Status', zh='状态')}:** {meta.get('status', 'active')}",
        f"- **{text(en='Thoughts', zh='思考数')}:** {len(state.thoughts)}",
        f"- **{text(en='Planned total', zh='计划总数')}:** {meta.get('total_thoughts') or '-'}",
        f"- **{text(en='Created', zh='创建时间')}:** {meta.get('created_at', '')}",
        f"- **{text(en='Updated', zh='更新时间')}:** {meta.get('updated_at', '')}",
    ]
    if meta.get("created_by"):
        lines.append(f"- **{text(en='Created by', zh='创建者')}:** {_md(str(meta['created_by']))}")
    if meta.get("template_id"):
        lines.append(f"- **{text(en='Template', zh='模板')}:** {meta['template_id']}")
    lines += ["", f"## {text(en='Main line', zh='主线')}", ""]

    def thought_block(thought: dict[str, Any]) -> list[str]:
        label = thought["thought_number"]
        kind = {"revision": text(en="revision", zh="修订"), "branch": text(en="branch", zh="分支")}.get(
            thought["type"], ""
        )
        heading = f"### {text(en='Thought', zh='思考')} {label} · #{thought['seq']}"
        if kind:
            heading += f" · **{kind}**"
        author = author_words(thought, text)
        if author:
            heading += f" · {_md(author)}"
        block = [heading, ""]
        labels = label_words(thought, text)
        if labels:
            block += [f"*{_md(labels)}*", ""]
        for words in _reference_words(thought, text):
            block += [f"*↩ {words}*", ""]
        block += [_md(str(thought["content"])), ""]
        return block

    for thought in main_line(state):
        lines += thought_block(thought)
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        origin_seq = thoughts[0].get("branch_from_seq")
        where = (
            f"#{origin_seq}"
            if origin_seq is not None
            else text(en="not in this session", zh="本会话中不存在")
        )
        lines += [
            f"## {text(en='Branch', zh='分支')} `{branch_id}` — "
            f"{text(en='from thought', zh='起自思考')} {origin} ({where})",
            "",
        ]
        for thought in thoughts:
            lines += thought_block(thought)
    if state.adjustments:
        lines += [f"## {text(en='Adjustments of the total', zh='总数调整记录')}", ""]
        for item in state.adjustments:
            lines.append(
                f"- {item['time']}: {item['from_total']} → {item['to_total']} "
                f"({item['reason']}, #{item['sequence']})"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# --- plain text ------------------------------------------------------------------------


def to_text(state: SessionState, text: Text) -> str:
    meta = state.meta
    title = visible(str(meta.get("name", state.session_id)))
    lines = [title, "=" * max(3, min(len(title), 78)), ""]
    if meta.get("description"):
        lines += [visible(str(meta["description"])), ""]
    lines += [
        f"{text(en='Session', zh='会话')}: {state.session_id}",
        f"{text(en='Status', zh='状态')}: {meta.get('status', 'active')}",
        f"{text(en='Thoughts', zh='思考数')}: {len(state.thoughts)}",
        f"{text(en='Planned total', zh='计划总数')}: {meta.get('total_thoughts') or '-'}",
    ]
    if meta.get("created_by"):
        lines.append(f"{text(en='Created by', zh='创建者')}: {visible(str(meta['created_by']))}")
    lines.append("")

    def block(thought: dict[str, Any], indent: str) -> list[str]:
        head = f"{indent}[{thought['thought_number']}] #{thought['seq']} {thought['type']}"
        author = author_words(thought, text)
        if author:
            head += f" {visible(author)}"
        refs = _reference_words(thought, text)
        if refs:
            head += " - " + "; ".join(refs)
        labels = label_words(thought, text)
        if labels:
            head += f" ({labels})"
        body = [indent + "    " + line for line in visible(str(thought["content"])).splitlines() or [""]]
        return [head, *body, ""]

    lines += [text(en="Main line", zh="主线"), "---------", ""]
    for thought in main_line(state):
        lines += block(thought, "")
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        lines += [
            f"{text(en='Branch', zh='分支')} {branch_id} ({text(en='from thought', zh='起自思考')} {origin})",
            "",
        ]
        for thought in thoughts:
            lines += block(thought, "  ")
    return "\n".join(lines).rstrip("\n") + "\n"


# --- HTML ------------------------------------------------------------------------------

_STYLE = """
:root { color-scheme: light; --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --paper: #ffffff;
  --bg: #f5f7fa; --accent: #2f6fde; --rev: #c2410c; --rev-bg: #fff7ed; --br: #047857; --br-bg: #ecfdf5; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 16px/1.6 -apple-system, "Segoe UI", Roboto, "Noto Sans", "PingFang SC", "Microsoft YaHei",
  sans-serif; }
.page { max-width: 860px; margin: 0 auto; padding: 40px 24px 64px; }
header.session h1 { margin: 0 0 8px; font-size: 30px; line-height: 1.25; overflow-wrap: anywhere; }
.description { margin: 0 0 16px; color: var(--muted); white-space: pre-wrap; overflow-wrap: anywhere; }
.facts { display: flex; flex-wrap: wrap; gap: 8px 24px; margin: 0 0 28px; padding: 14px 18px;
  background: var(--paper); border: 1px solid var(--line); border-radius: 10px; }
.facts div { min-width: 110px; }
.facts dt { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
h2 { font-size: 20px; margin: 36px 0 14px; padding-bottom: 6px; border-bottom: 2px solid var(--line); }
h2 code, .facts code { font-size: .9em; background: #eef2f7; padding: 1px 6px; border-radius: 4px; }
ol.thoughts { list-style: none; margin: 0; padding: 0 0 0 22px; border-left: 3px solid var(--line); }
.thought { position: relative; margin: 0 0 14px; padding: 14px 18px; background: var(--paper);
  border: 1px solid var(--line); border-radius: 10px; box-shadow: 0 1px 2px rgba(15, 23, 42, .05); }
.thought::before { content: ""; position: absolute; left: -31px; top: 20px; width: 13px; height: 13px;
  border-radius: 50%; background: var(--accent); border: 3px solid var(--bg); }
.thought.revision { background: var(--rev-bg); border-color: #fdba74; }
.thought.revision::before { background: var(--rev); }
.thought.branch::before { background: var(--br); }
.thought:target { outline: 3px solid var(--accent); outline-offset: 2px; }
.meta { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; margin-bottom: 6px;
  font-size: 13px; color: var(--muted); }
.meta .label { font-size: 15px; font-weight: 700; color: var(--ink); }
.tag { font-size: 12px; font-weight: 600; padding: 1px 8px; border-radius: 999px; }
.tag.revision { color: var(--rev); background: #ffedd5; }
.tag.branch { color: var(--br); background: #d1fae5; }
.ref { margin: 0 0 6px; font-size: 14px; }
.labels { margin: 0 0 6px; font-size: 13px; color: var(--muted); }
.ref a { color: var(--rev); font-weight: 600; }
.ref.dangling { color: var(--muted); font-style: italic; }
.content { overflow-wrap: anywhere; }
.content > :first-child { margin-top: 0; }
.content > :last-child { margin-bottom: 0; }
.content p, .content ul, .content ol, .content blockquote, .content table { margin: 0 0 10px; }
.content pre { margin: 0 0 10px; padding: 10px 12px; background: #f3f5f9; border-radius: 6px;
  overflow-x: auto; overflow-wrap: normal; white-space: pre; }
.content code { font: 14px/1.5 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.content :not(pre) > code { background: #eef2f7; padding: 1px 5px; border-radius: 4px; }
.content blockquote { padding-left: 12px; border-left: 3px solid var(--line); color: var(--muted); }
section.branch { margin-top: 8px; padding: 4px 18px 8px; background: var(--br-bg); border-radius: 12px;
  border: 1px solid #a7f3d0; }
section.branch h2 { border-bottom-color: #a7f3d0; }
section.branch .origin { margin: -6px 0 14px; font-size: 14px; color: var(--muted); }
section.branch .origin a { color: var(--br); font-weight: 600; }
table { width: 100%; border-collapse: collapse; background: var(--paper); font-size: 14px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
a { color: var(--accent); }
"""


def _h(value: Any) -> str:
    return html.escape(visible(str(value)), quote=True)


def _when(stamp: Any) -> str:
    """An ISO timestamp as people read it: ``2026-01-01 10:00:00 UTC``."""
    text = str(stamp or "")
    if re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text) and text.endswith("Z"):
        return _h(text[:19].replace("T", " ") + " UTC")
    return _h(text)


def to_html(state: SessionState, text: Text, language: str) -> str:
    meta = state.meta

    def fact(name: str, value: str) -> str:
        return f"<div><dt>{_h(name)}</dt><dd>{value}</dd></div>"

    def article(thought: dict[str, Any]) -> str:
        seq = int(thought["seq"])
        kind = str(thought["type"])
        tags = ""
        if kind == "revision":
            tags = f'<span class="tag revision">{_h(text(en="revision", zh="修订"))}</span>'
        elif kind == "branch":
            branch_word = _h(text(en="branch", zh="分支"))
            tags = f'<span class="tag branch">{branch_word} {_h(thought.get("branch_id"))}</span>'
        parts = [
            f'<li class="thought {_h(kind)}" id="thought-{seq}">',
            '<div class="meta">',
            f'<span class="label">{_h(text(en="Thought", zh="思考"))} {_h(thought["thought_number"])}</span>',
            f'<span class="seq">#{seq}</span>{tags}',
            *([f'<span class="by">{_h(author)}</span>'] if (author := author_words(thought, text)) else []),
            f'<time datetime="{_h(thought.get("timestamp", ""))}">{_when(thought.get("timestamp"))}</time>',
            "</div>",
        ]
        labels = label_words(thought, text)
        if labels:
            parts.append(f'<p class="labels">{_h(labels)}</p>')
        if thought.get("is_revision"):
            target = thought.get("revises_thought")
            target_seq = thought.get("revises_seq")
            if target_seq is None:
                parts.append(
                    f'<p class="ref dangling">↩ {_h(text(en="Revises thought", zh="修订思考"))} {_h(target)} '
                    f"({_h(text(en='not in this session', zh='本会话中不存在'))})</p>"
                )
            else:
                parts.append(
                    f'<p class="ref">↩ {_h(text(en="Revises", zh="修订"))} '
                    f'<a class="revises" href="#thought-{int(target_seq)}">'
                    f"{_h(text(en='thought', zh='思考'))} {_h(target)}</a></p>"
                )
        # The thought is Markdown: rendered with raw HTML escaped and unsafe links left as text.
        rendered = markdown_renderer().render(visible(str(thought["content"])))
        parts += [f'<div class="content">{rendered}</div>', "</li>"]
        return "".join(parts)

    facts = [
        fact(text(en="Status", zh="状态"), _h(meta.get("status", "active"))),
        fact(text(en="Thoughts", zh="思考数"), _h(len(state.thoughts))),
        fact(text(en="Planned total", zh="计划总数"), _h(meta.get("total_thoughts") or "-")),
        fact(text(en="Branches", zh="分支数"), _h(len(state.branches))),
        fact(text(en="Created", zh="创建时间"), _when(meta.get("created_at"))),
        fact(text(en="Updated", zh="更新时间"), _when(meta.get("updated_at"))),
        fact(text(en="Session", zh="会话"), f"<code>{_h(state.session_id)}</code>"),
    ]
    if meta.get("created_by"):
        facts.append(fact(text(en="Created by", zh="创建者"), _h(meta["created_by"])))
    if meta.get("template_id"):
        facts.append(fact(text(en="Template", zh="模板"), _h(meta["template_id"])))
    body = [
        '<header class="session">',
        f"<h1>{_h(meta.get('name', state.session_id))}</h1>",
    ]
    if meta.get("description"):
        body.append(f'<p class="description">{_h(meta["description"])}</p>')
    body += [f'<dl class="facts">{"".join(facts)}</dl>', "</header>", "<main>"]
    body += [
        f'<section class="main-line" aria-label="{_h(text(en="Main line", zh="主线"))}">',
        f"<h2>{_h(text(en='Main line', zh='主线'))}</h2>",
        '<ol class="thoughts">',
        *(article(thought) for thought in main_line(state)),
        "</ol></section>",
    ]
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        origin_seq = thoughts[0].get("branch_from_seq")
        if origin_seq is None:
            absent = _h(text(en="not in this session", zh="本会话中不存在"))
            where = f"{_h(text(en='thought', zh='思考'))} {_h(origin)} ({absent})"
        else:
            word = _h(text(en="thought", zh="思考"))
            where = f'<a class="branch-origin" href="#thought-{int(origin_seq)}">{word} {_h(origin)}</a>'
        body += [
            f'<section class="branch" id="branch-{_h(branch_id)}" data-branch="{_h(branch_id)}">',
            f"<h2>{_h(text(en='Branch', zh='分支'))} <code>{_h(branch_id)}</code></h2>",
            f'<p class="origin">{_h(text(en="Branches from", zh="分支起点"))} {where}</p>',
            '<ol class="thoughts">',
            *(article(thought) for thought in thoughts),
            "</ol></section>",
        ]
    if state.adjustments:
        rows = "".join(
            f"<tr><td>{_when(item['time'])}</td><td>{_h(item['from_total'])} → {_h(item['to_total'])}</td>"
            f"<td>{_h(item['reason'])}</td>"
            f'<td><a href="#thought-{int(item["sequence"])}">#{_h(item["sequence"])}</a></td></tr>'
            for item in state.adjustments
        )
        body += [
            '<section class="adjustments">',
            f"<h2>{_h(text(en='Adjustments of the total', zh='总数调整记录'))}</h2>",
            "<table><thead><tr>",
            f"<th>{_h(text(en='Time', zh='时间'))}</th><th>{_h(text(en='Total', zh='总数'))}</th>",
            f"<th>{_h(text(en='Reason', zh='原因'))}</th><th>{_h(text(en='Thought', zh='思考'))}</th>",
            "</tr></thead>",
            f"<tbody>{rows}</tbody></table></section>",
        ]
    body += [
        "</main>",
        f"<footer>{_h(text(en='Exported', zh='导出于'))} {_when(utc_now())} · hostd deep-thinking</footer>",
    ]
    title = f"{meta.get('name', state.session_id)} · {text(en='Deep thinking', zh='深度思考')}"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{"zh-CN" if language == "zh" else "en"}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{HTML_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{_h(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f'<body>\n<div class="page">\n' + "\n".join(body) + "\n</div>\n</body>\n</html>\n"
    )


# --- import ----------------------------------------------------------------------------


class ImportedThought(BaseModel):
    """A thought as an import may carry it: the spec's fields, with what we can derive left optional."""

    seq: int | None = Field(default=None, ge=1)
    sequence: int | None = Field(default=None, ge=1)
    thought_number: int = Field(ge=1, le=MAX_THOUGHTS)
    content: str = Field(min_length=1, max_length=MAX_THOUGHT_CHARS)
    type: str | None = None
    is_revision: bool = False
    revises_thought: int | None = Field(default=None, ge=1)
    branch_from_thought: int | None = Field(default=None, ge=1)
    branch_id: str | None = Field(default=None, pattern=BRANCH_ID_PATTERN)
    total_thoughts: int | None = Field(default=None, ge=1)
    next_thought_needed: bool = True
    needs_more_thoughts: bool = False
    timestamp: str | None = Field(default=None, max_length=64)
    stage: str | None = Field(default=None, min_length=1, max_length=MAX_STAGE_CHARS)
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    by: str | None = Field(default=None, pattern=MEMBER_NAME_PATTERN)


class ImportedAdjustment(BaseModel):
    time: str = Field(max_length=64)
    from_total: int
    to_total: int
    reason: str = Field(max_length=64)
    sequence: int


class ImportedSession(BaseModel):
    session_id: str = Field(pattern=SESSION_ID_PATTERN)
    name: str | None = Field(default=None, max_length=200)
    description: str = Field(default="", max_length=5000)
    created_at: str | None = Field(default=None, max_length=64)
    updated_at: str | None = Field(default=None, max_length=64)
    status: str = Field(default="active", pattern=r"^(active|completed|archived)$")
    metadata: dict[str, Any] = Field(default_factory=dict)
    template_id: str | None = Field(default=None, max_length=64)
    created_by: str | None = Field(default=None, pattern=MEMBER_NAME_PATTERN)
    total_thoughts: int | None = Field(default=None, ge=1)
    adjustments: list[ImportedAdjustment] = Field(default_factory=list)
    thoughts: list[ImportedThought] = Field(default_factory=list, max_length=MAX_THOUGHTS)


class ImportProblem(Exception):
    """The data is not a session this plugin can import; ``field`` says where, in both languages."""

    def __init__(self, field_name: str, en: str, zh: str) -> None:
        super().__init__(en)
        self.field = field_name
        self.en = en
        self.zh = zh


_JSON_KINDS = {list: ("array", "数组"), str: ("string", "字符串"), bool: ("boolean", "布尔值")}


def _not_an_object(raw: Any) -> ImportProblem:
    en_kind, zh_kind = _JSON_KINDS.get(
        type(raw), ("number" if raw is not None else "null", "数字" if raw is not None else "null")
    )
    return ImportProblem(
        "(root)",
        en=f"the document is a JSON {en_kind}, not an object",
        zh=f"文档是 JSON {zh_kind}，不是对象",
    )


def _unwrap_export(raw: dict[str, Any]) -> dict[str, Any]:
    """The session inside an export_session(format='json') wrapper, after checking its tag and version."""
    tag = raw.get("format")
    if tag != EXPORT_FORMAT:
        found_en = "it is missing" if tag is None else f"found {str(tag)[:80]!r}"
        found_zh = "缺少该字段" if tag is None else f"实际为 {str(tag)[:80]!r}"
        raise ImportProblem(
            "format",
            en=f"an export is tagged format '{EXPORT_FORMAT}'; {found_en}",
            zh=f"导出文件的 format 应为 '{EXPORT_FORMAT}'；{found_zh}",
        )
    version = raw.get("format_version", 1)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ImportProblem(
            "format_version",
            en=f"unsupported format_version {str(version)[:40]!r} (this server reads {FORMAT_VERSION})",
            zh=f"不支持的 format_version {str(version)[:40]!r}（本服务读取 {FORMAT_VERSION}）",
        )
    session = raw.get("session")
    if not isinstance(session, dict):
        raise ImportProblem("session", en="the export holds no session object", zh="导出文件中没有会话对象")
    return session


def _validation_problem(exc: ValidationError) -> ImportProblem:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(root)"
    if first["type"] == "missing":
        return ImportProblem(where, en="missing", zh="缺少该字段")
    return ImportProblem(where, en=first["msg"], zh=f"取值无效（{first['type']}）")


def parse_import(raw: Any, session_id: str | None, *, importer: str | None = None) -> dict[str, Any]:
    """A stored session document from an export (any known version) or a bare spec-shaped session.

    The session keeps the ``created_by`` it carries; one without (an older export, another
    program's document) is recorded as created by ``importer``. Thoughts keep their ``by``, if any.
    Anything else is refused before a byte is stored: a document without a ``thoughts`` list
    (``{}``, another program's layout) is not an empty session.
    """
    if not isinstance(raw, dict):
        raise _not_an_object(raw)
    source = _unwrap_export(raw) if "format" in raw or "session" in raw else raw
    source = dict(source)
    if session_id is not None:
        source["session_id"] = session_id
    if not isinstance(source.get("thoughts"), list):
        raise ImportProblem(
            "thoughts",
            en='missing or not a list: a session lists its thoughts (an empty one has "thoughts": [])',
            zh='缺少该字段或不是列表：会话须列出其思考（空会话为 "thoughts": []）',
        )
    if len(source["thoughts"]) > MAX_THOUGHTS:
        raise ImportProblem(
            "thoughts", en=f"more than {MAX_THOUGHTS} thoughts", zh=f"思考超过 {MAX_THOUGHTS} 条"
        )
    problem = shape_problem(source.get("metadata", {}))
    if problem == "too_deep":
        raise ImportProblem(
            "metadata",
            en=f"nested deeper than {MAX_NESTING} levels",
            zh=f"嵌套超过 {MAX_NESTING} 层",
        )
    if problem == "not_finite":
        raise ImportProblem("metadata", en="holds NaN or Infinity", zh="含有 NaN 或 Infinity")
    try:
        session = ImportedSession.model_validate(source)
    except ValidationError as exc:
        raise _validation_problem(exc) from None
    now = utc_now()
    thoughts: list[dict[str, Any]] = []
    latest_by_label: dict[int, int] = {}
    last_seq = 0
    for item in session.thoughts:
        seq = item.seq or item.sequence or last_seq + 1
        if seq <= last_seq:
            raise ImportProblem(
                "thoughts",
                en=f"sequence numbers must increase (found {seq} after {last_seq})",
                zh=f"序号必须递增（{last_seq} 之后出现 {seq}）",
            )
        in_a_branch = item.branch_id is not None and item.branch_from_thought is not None
        kind = "revision" if item.is_revision else "branch" if in_a_branch else "regular"
        thoughts.append(
            {
                "seq": seq,
                "thought_number": item.thought_number,
                "content": item.content,
                "type": kind,
                "is_revision": item.is_revision,
                "revises_thought": item.revises_thought,
                "revises_seq": latest_by_label.get(item.revises_thought) if item.revises_thought else None,
                "branch_from_thought": item.branch_from_thought,
                "branch_from_seq": (
                    latest_by_label.get(item.branch_from_thought) if item.branch_from_thought else None
                ),
                "branch_id": item.branch_id,
                "total_thoughts": item.total_thoughts
                or max(item.thought_number, session.total_thoughts or 1),
                "next_thought_needed": item.next_thought_needed,
                "needs_more_thoughts": item.needs_more_thoughts,
                "timestamp": item.timestamp or now,
            }
        )
        if item.stage is not None:
            thoughts[-1]["stage"] = item.stage
        if item.tags:
            thoughts[-1]["tags"] = item.tags
        if item.by is not None:
            thoughts[-1]["by"] = item.by
        latest_by_label[item.thought_number] = seq
        last_seq = seq
    return {
        "format_version": FORMAT_VERSION,
        "session_id": session.session_id,
        "name": session.name or session.session_id,
        "description": session.description,
        "created_at": session.created_at or now,
        "updated_at": session.updated_at or now,
        "status": session.status,
        "metadata": session.metadata,
        "template_id": session.template_id,
        "is_default": False,
        "created_by": session.created_by or importer,
        "total_thoughts": session.total_thoughts or (thoughts[-1]["total_thoughts"] if thoughts else None),
        "last_seq": last_seq,
        "recovery_log": [],
        "adjustments": [item.model_dump() for item in session.adjustments],
        "thoughts": thoughts,
    }
