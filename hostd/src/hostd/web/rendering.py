"""Turning stored text into page HTML without letting it act: Jinja2 with autoescaping for every
template, Markdown through markdown-it-py with raw HTML off, and readable times.

Stored content is data. A memory holding ``<script>`` is shown as text; a Markdown link to
``javascript:`` stays text (markdown-it's link check); links that do render open with
``rel="noopener noreferrer nofollow"``; images are off (a page loads nothing it did not ship).
"""

from __future__ import annotations

import functools
from datetime import datetime
from pathlib import Path
from typing import Any

from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


@functools.cache
def page_style() -> tuple[Markup, str]:
    """The dashboard's stylesheets as one ``<style>`` text, and its CSP source (``'sha256-...'``).

    Every page carries its style inline: a stylesheet link blocks the first paint until a second
    request comes back (on a busy server, hundreds of milliseconds). The policy stays without
    ``'unsafe-inline'``: it allows this exact text by its hash, nothing else inline.
    """
    import base64
    import hashlib

    text = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in ("app.css", "pages.css"))
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return Markup(text), f"'sha256-{digest}'"


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    renderer.enable(["table", "strikethrough"])
    renderer.disable("image")

    def link_open(self: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
        tokens[index].attrSet("rel", "noopener noreferrer nofollow")
        return str(self.renderToken(tokens, index, options, env))

    def demoted(self: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
        # A stored "# Title" sits under the page's own h1 and section h2: it becomes an h3.
        token = tokens[index]
        token.tag = f"h{min(6, int(token.tag[1]) + 2)}"
        return str(self.renderToken(tokens, index, options, env))

    renderer.add_render_rule("link_open", link_open)
    renderer.add_render_rule("heading_open", demoted)
    renderer.add_render_rule("heading_close", demoted)
    return renderer


def markdown(text: str | Slot) -> Markup:
    """Markdown as HTML that runs nothing: raw HTML escaped, unsafe link targets left as text;
    headings two levels down (the page has its own h1 and h2)."""
    if isinstance(text, Slot):
        return text.piped("markdown")
    return Markup(_markdown().render(text or ""))  # markdown-it escapes, html is off


def mermaid_text(value: str) -> str:
    """Text for inside a quoted Mermaid label (``A["{{ x | mermaid_text }}"]``): everything but
    letters, digits and spaces becomes Mermaid's ``#code;`` entity (line breaks a space), so the
    text can neither end the label nor the statement, nor carry markup; Mermaid shows the
    characters themselves."""
    replaced = []
    for char in value:
        if char.isalnum() or char == " ":
            replaced.append(char)
        elif char in "\r\n\t":
            replaced.append(" ")
        else:
            replaced.append(f"#{ord(char)};")
    return "".join(replaced)


class Slot:
    """A record's field in a view's ``<template>`` (MCP Apps): the dashboard's macro is called with
    a slot for its record, so the markup a view fills in is the dashboard's, drawn once.

    A slot renders as ``⟦path⟧`` in text and attributes (``⟦task.title⟧``, with filters
    ``⟦thought.timestamp|when⟧``); ``static/view.js`` puts each field's value there as text. A
    slot is true, so a conditional part is always drawn; ``host/macros.html``'s ``part`` and
    ``each`` mark conditional and repeated parts as nested ``<template>`` elements."""

    __slots__ = ("path",)

    def __init__(self, path: str = "") -> None:
        self.path = path

    def __getattr__(self, name: str) -> Slot:
        if name.startswith("__"):
            raise AttributeError(name)
        return Slot(f"{self.path}.{name}" if self.path else name)

    def __getitem__(self, key: object) -> Slot:
        return self.__getattr__(str(key))

    def get(self, key: str, default: object = None) -> Slot:
        return self.__getattr__(key)

    def item(self) -> Slot:
        """One element of the list at this path (inside ``each``)."""
        return Slot(self.path + "[]")

    def piped(self, name: str, argument: str = "") -> Markup:
        return Markup(f"⟦{self.path}|{name}{':' + argument if argument else ''}⟧")

    def __html__(self) -> str:
        return f"⟦{self.path}⟧"

    def __str__(self) -> str:
        return self.__html__()

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Any:
        yield self


class SlotNames:
    """A table of names for slots: ``names[slot]`` is ``⟦path|kind⟧``, the view looks the name up
    (a status's words, say) where the dashboard's page hands the macro a dict."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __getitem__(self, key: Slot) -> Markup:
        return key.piped(self.kind)

    def get(self, key: Slot, default: object = None) -> Markup:
        return key.piped(self.kind)


def flag(value: object, text: str) -> str:
    """``text`` when ``value`` holds, else nothing: a class that comes and goes with a field
    (``class="thought{{ thought.is_revision | flag(' revision') }}"``)."""
    if isinstance(value, Slot):
        return value.piped("flag", text)
    return text if value else ""


def when(value: str | Slot | None) -> str:
    """An ISO 8601 time as ``2026-11-27 07:30 UTC``; empty for none; the raw text if unreadable."""
    if isinstance(value, Slot):
        return value.piped("when")
    if not value:
        return ""
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return stamp.strftime("%Y-%m-%d %H:%M UTC")


def environment(plugin_templates: dict[str, Path]) -> Any:
    """One Jinja2 environment: the host's templates under ``host/``, each plugin's under its name."""
    from jinja2 import Environment, FileSystemLoader, PrefixLoader, StrictUndefined

    loaders: dict[str, Any] = {"host": FileSystemLoader(TEMPLATES)}
    for plugin, folder in plugin_templates.items():
        loaders[plugin] = FileSystemLoader(folder)
    env = Environment(
        loader=PrefixLoader(loaders),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["when"] = when
    env.filters["mermaid_text"] = mermaid_text
    env.filters["flag"] = flag
    _slot_aware_filters(env)
    env.tests["slot"] = lambda value: isinstance(value, Slot)
    env.globals["as_piece"] = False  # True where a view draws a macro as a <template>
    return env


def _slot_aware_filters(env: Any) -> None:
    """``length``, ``join`` and ``default`` as Jinja has them, but a slot stays a slot (with the
    filter named in its marker), so a macro reads the same for a record and for a slot."""
    from jinja2 import pass_eval_context
    from jinja2.filters import do_default, do_join

    def length(value: Any) -> Any:
        return value.piped("length") if isinstance(value, Slot) else len(value)

    @pass_eval_context
    def join(context: Any, value: Any, d: str = "", attribute: Any = None) -> Any:
        if isinstance(value, Slot):
            return value.piped("join", d)
        return do_join(context, value, d, attribute)

    def default(value: Any, default_value: Any = "", boolean: bool = False) -> Any:
        if isinstance(value, Slot):
            return value.piped("default", str(default_value))
        return do_default(value, default_value, boolean)

    env.filters["length"] = env.filters["count"] = length
    env.filters["join"] = join
    env.filters["default"] = env.filters["d"] = default
