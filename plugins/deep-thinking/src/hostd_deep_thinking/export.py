"""Session documents turned into files people and programs read: JSON, Markdown, HTML, text.

The JSON export is the whole session with a format version, and ``importing.parse_import`` reads it
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
from typing import Any

from hostd_db import utc_stamp
from markdown_it import MarkdownIt

from hostd import Text
from hostd_deep_thinking.store import FORMAT_VERSION, SessionState

EXPORT_FORMAT = "hostd-deep-thinking-session"
#: Picks the document's words in its language: ``say(en=..., zh=...)``.
Say = Callable[..., str]
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

HTML_CSP = (
    "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def words_in(language: str) -> Say:
    """How a document in ``language`` picks its words (headings, labels) from both spellings."""

    def say(*, en: str, zh: str) -> str:
        return Text(en=en, zh=zh).render(language)

    return say


def status_words(status: str, say: Say) -> str:
    """A session's status in the document's language."""
    words = {
        "active": say(en="active", zh="进行中"),
        "completed": say(en="completed", zh="已完成"),
        "archived": say(en="archived", zh="已归档"),
    }
    return words.get(status, status)


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
        "exported_at": utc_stamp(),
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


def _reference_words(thought: dict[str, Any], say: Say) -> list[str]:
    words = []
    if thought.get("is_revision"):
        target = thought.get("revises_thought")
        if thought.get("revises_seq") is None:
            words.append(
                say(
                    en=f"revises thought {target} (not in this session)",
                    zh=f"修订思考 {target}（本会话中不存在）",
                )
            )
        else:
            words.append(
                say(
                    en=f"revises thought {target} (#{thought['revises_seq']})",
                    zh=f"修订思考 {target}（#{thought['revises_seq']}）",
                )
            )
    return words


def label_words(thought: dict[str, Any], say: Say) -> str | None:
    """The thought's optional stage and tags as one line ('stage: analysis · tags: risk, cost'), or None."""
    parts = []
    if thought.get("stage"):
        parts.append(f"{say(en='stage', zh='阶段')}: {visible(str(thought['stage']))}")
    if thought.get("tags"):
        parts.append(f"{say(en='tags', zh='标签')}: {', '.join(visible(str(t)) for t in thought['tags'])}")
    return " · ".join(parts) or None


def author_words(thought: dict[str, Any], say: Say) -> str | None:
    """Who added the thought ('by alice'), or None for thoughts from before members were recorded."""
    return say(en=f"by {thought['by']}", zh=f"作者：{thought['by']}") if thought.get("by") else None


def to_markdown(state: SessionState, language: str) -> str:
    say = words_in(language)
    meta = state.meta
    lines = [f"# {_md(str(meta.get('name', state.session_id)))}", ""]
    if meta.get("description"):
        lines += [f"> {_md(str(meta['description']))}".replace("\n", "\n> "), ""]
    lines += [
        f"- **{say(en='Session', zh='会话')}:** `{state.session_id}`",
        f"- **{say(en='Status', zh='状态')}:** {status_words(str(meta.get('status', 'active')), say)}",
        f"- **{say(en='Thoughts', zh='思考数')}:** {len(state.thoughts)}",
        f"- **{say(en='Planned total', zh='计划总数')}:** {meta.get('total_thoughts') or '-'}",
        f"- **{say(en='Created', zh='创建时间')}:** {meta.get('created_at', '')}",
        f"- **{say(en='Updated', zh='更新时间')}:** {meta.get('updated_at', '')}",
    ]
    if meta.get("created_by"):
        lines.append(f"- **{say(en='Created by', zh='创建者')}:** {_md(str(meta['created_by']))}")
    if meta.get("template_id"):
        lines.append(f"- **{say(en='Template', zh='模板')}:** {meta['template_id']}")
    lines += ["", f"## {say(en='Main line', zh='主线')}", ""]

    def thought_block(thought: dict[str, Any]) -> list[str]:
        label = thought["thought_number"]
        kind = {"revision": say(en="revision", zh="修订"), "branch": say(en="branch", zh="分支")}.get(
            thought["type"], ""
        )
        heading = f"### {say(en='Thought', zh='思考')} {label} · #{thought['seq']}"
        if kind:
            heading += f" · **{kind}**"
        author = author_words(thought, say)
        if author:
            heading += f" · {_md(author)}"
        block = [heading, ""]
        labels = label_words(thought, say)
        if labels:
            block += [f"*{_md(labels)}*", ""]
        for words in _reference_words(thought, say):
            block += [f"*↩ {words}*", ""]
        block += [_md(str(thought["content"])), ""]
        return block

    for thought in main_line(state):
        lines += thought_block(thought)
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        origin_seq = thoughts[0].get("branch_from_seq")
        where = (
            f"#{origin_seq}" if origin_seq is not None else say(en="not in this session", zh="本会话中不存在")
        )
        lines += [
            f"## {say(en='Branch', zh='分支')} `{branch_id}` — "
            f"{say(en='from thought', zh='起自思考')} {origin} ({where})",
            "",
        ]
        for thought in thoughts:
            lines += thought_block(thought)
    if state.adjustments:
        lines += [f"## {say(en='Adjustments of the total', zh='总数调整记录')}", ""]
        for item in state.adjustments:
            lines.append(
                f"- {item['time']}: {item['from_total']} → {item['to_total']} "
                f"({item['reason']}, #{item['sequence']})"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# --- plain text ------------------------------------------------------------------------


def to_text(state: SessionState, language: str) -> str:
    say = words_in(language)
    meta = state.meta
    title = visible(str(meta.get("name", state.session_id)))
    lines = [title, "=" * max(3, min(len(title), 78)), ""]
    if meta.get("description"):
        lines += [visible(str(meta["description"])), ""]
    lines += [
        f"{say(en='Session', zh='会话')}: {state.session_id}",
        f"{say(en='Status', zh='状态')}: {status_words(str(meta.get('status', 'active')), say)}",
        f"{say(en='Thoughts', zh='思考数')}: {len(state.thoughts)}",
        f"{say(en='Planned total', zh='计划总数')}: {meta.get('total_thoughts') or '-'}",
    ]
    if meta.get("created_by"):
        lines.append(f"{say(en='Created by', zh='创建者')}: {visible(str(meta['created_by']))}")
    lines.append("")

    def block(thought: dict[str, Any], indent: str) -> list[str]:
        head = f"{indent}[{thought['thought_number']}] #{thought['seq']} {thought['type']}"
        author = author_words(thought, say)
        if author:
            head += f" {visible(author)}"
        refs = _reference_words(thought, say)
        if refs:
            head += " - " + "; ".join(refs)
        labels = label_words(thought, say)
        if labels:
            head += f" ({labels})"
        body = [indent + "    " + line for line in visible(str(thought["content"])).splitlines() or [""]]
        return [head, *body, ""]

    lines += [say(en="Main line", zh="主线"), "---------", ""]
    for thought in main_line(state):
        lines += block(thought, "")
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        lines += [
            f"{say(en='Branch', zh='分支')} {branch_id} ({say(en='from thought', zh='起自思考')} {origin})",
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


def to_html(state: SessionState, language: str) -> str:
    say = words_in(language)
    meta = state.meta

    def fact(name: str, value: str) -> str:
        return f"<div><dt>{_h(name)}</dt><dd>{value}</dd></div>"

    def article(thought: dict[str, Any]) -> str:
        seq = int(thought["seq"])
        kind = str(thought["type"])
        tags = ""
        if kind == "revision":
            tags = f'<span class="tag revision">{_h(say(en="revision", zh="修订"))}</span>'
        elif kind == "branch":
            branch_word = _h(say(en="branch", zh="分支"))
            tags = f'<span class="tag branch">{branch_word} {_h(thought.get("branch_id"))}</span>'
        parts = [
            f'<li class="thought {_h(kind)}" id="thought-{seq}">',
            '<div class="meta">',
            f'<span class="label">{_h(say(en="Thought", zh="思考"))} {_h(thought["thought_number"])}</span>',
            f'<span class="seq">#{seq}</span>{tags}',
            *([f'<span class="by">{_h(author)}</span>'] if (author := author_words(thought, say)) else []),
            f'<time datetime="{_h(thought.get("timestamp", ""))}">{_when(thought.get("timestamp"))}</time>',
            "</div>",
        ]
        labels = label_words(thought, say)
        if labels:
            parts.append(f'<p class="labels">{_h(labels)}</p>')
        if thought.get("is_revision"):
            target = thought.get("revises_thought")
            target_seq = thought.get("revises_seq")
            if target_seq is None:
                parts.append(
                    f'<p class="ref dangling">↩ {_h(say(en="Revises thought", zh="修订思考"))} {_h(target)} '
                    f"({_h(say(en='not in this session', zh='本会话中不存在'))})</p>"
                )
            else:
                parts.append(
                    f'<p class="ref">↩ {_h(say(en="Revises", zh="修订"))} '
                    f'<a class="revises" href="#thought-{int(target_seq)}">'
                    f"{_h(say(en='thought', zh='思考'))} {_h(target)}</a></p>"
                )
        # The thought is Markdown: rendered with raw HTML escaped and unsafe links left as text.
        rendered = markdown_renderer().render(visible(str(thought["content"])))
        parts += [f'<div class="content">{rendered}</div>', "</li>"]
        return "".join(parts)

    facts = [
        fact(say(en="Status", zh="状态"), _h(status_words(str(meta.get("status", "active")), say))),
        fact(say(en="Thoughts", zh="思考数"), _h(len(state.thoughts))),
        fact(say(en="Planned total", zh="计划总数"), _h(meta.get("total_thoughts") or "-")),
        fact(say(en="Branches", zh="分支数"), _h(len(state.branches))),
        fact(say(en="Created", zh="创建时间"), _when(meta.get("created_at"))),
        fact(say(en="Updated", zh="更新时间"), _when(meta.get("updated_at"))),
        fact(say(en="Session", zh="会话"), f"<code>{_h(state.session_id)}</code>"),
    ]
    if meta.get("created_by"):
        facts.append(fact(say(en="Created by", zh="创建者"), _h(meta["created_by"])))
    if meta.get("template_id"):
        facts.append(fact(say(en="Template", zh="模板"), _h(meta["template_id"])))
    body = [
        '<header class="session">',
        f"<h1>{_h(meta.get('name', state.session_id))}</h1>",
    ]
    if meta.get("description"):
        body.append(f'<p class="description">{_h(meta["description"])}</p>')
    body += [f'<dl class="facts">{"".join(facts)}</dl>', "</header>", "<main>"]
    body += [
        f'<section class="main-line" aria-label="{_h(say(en="Main line", zh="主线"))}">',
        f"<h2>{_h(say(en='Main line', zh='主线'))}</h2>",
        '<ol class="thoughts">',
        *(article(thought) for thought in main_line(state)),
        "</ol></section>",
    ]
    for branch_id, thoughts in branch_groups(state):
        origin = thoughts[0].get("branch_from_thought")
        origin_seq = thoughts[0].get("branch_from_seq")
        if origin_seq is None:
            absent = _h(say(en="not in this session", zh="本会话中不存在"))
            where = f"{_h(say(en='thought', zh='思考'))} {_h(origin)} ({absent})"
        else:
            word = _h(say(en="thought", zh="思考"))
            where = f'<a class="branch-origin" href="#thought-{int(origin_seq)}">{word} {_h(origin)}</a>'
        body += [
            f'<section class="branch" id="branch-{_h(branch_id)}" data-branch="{_h(branch_id)}">',
            f"<h2>{_h(say(en='Branch', zh='分支'))} <code>{_h(branch_id)}</code></h2>",
            f'<p class="origin">{_h(say(en="Branches from", zh="分支起点"))} {where}</p>',
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
            f"<h2>{_h(say(en='Adjustments of the total', zh='总数调整记录'))}</h2>",
            "<table><thead><tr>",
            f"<th>{_h(say(en='Time', zh='时间'))}</th><th>{_h(say(en='Total', zh='总数'))}</th>",
            f"<th>{_h(say(en='Reason', zh='原因'))}</th><th>{_h(say(en='Thought', zh='思考'))}</th>",
            "</tr></thead>",
            f"<tbody>{rows}</tbody></table></section>",
        ]
    body += [
        "</main>",
        f"<footer>{_h(say(en='Exported', zh='导出于'))} {_when(utc_stamp())} · hostd deep-thinking</footer>",
    ]
    title = f"{meta.get('name', state.session_id)} · {say(en='Deep thinking', zh='深度思考')}"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{"zh-CN" if language == "zh" else "en"}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{HTML_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{_h(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f'<body>\n<div class="page">\n' + "\n".join(body) + "\n</div>\n</body>\n</html>\n"
    )
