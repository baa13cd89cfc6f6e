"""Views inside the chat (MCP Apps): the plugins' ``ui://`` documents, built from the dashboard's
templates, stylesheets and drawing code.

A client that speaks the extension reads a view once (``resources/read``), shows it in a
sandboxed frame beside a tool's answer and hands it that answer; what the view does next
(move a task, save a memory) it asks the client to call, so every write is a ``tools/call`` of
the connection's member through the host's call pipeline. The document holds no record: it is
rendered for the member (which write controls they may use) and nothing else, so a client may
keep it.

Nothing here imports the SDK: ``hostd.protocol`` adds the ``_meta`` and the resource answers.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hostd_errors import Message, Text, render
from markupsafe import Markup

from hostd.core.i18n import Language
from hostd.core.identity import Member
from hostd.web.rendering import STATIC, Slot, SlotNames, environment, page_style

if TYPE_CHECKING:
    from hostd.core.host import Host

#: The MIME type the extension serves a view with.
APP_MIME_TYPE = "text/html;profile=mcp-app"
#: What a view's document allows itself (the client adds its own, usually stricter, around the
#: frame): its own inline script and style, pictures drawn as data, no connection anywhere.
APP_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class AppView:
    """One plugin's view: its URI, its template and the tools that name it (served names)."""

    plugin: str
    name: str
    template: str
    tools: tuple[str, ...]
    title: Message
    data: Mapping[str, object]
    diagram: bool = False

    @property
    def uri(self) -> str:
        return f"ui://hostd/{self.plugin}/{self.name}"


@functools.cache
def _static(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def _strings(table: dict[str, Message]) -> Markup:
    """A mapping of messages as ``{"en": {...}, "zh": {...}}`` JSON, safe inside ``<script>``."""
    data = {lang: {key: render(text, lang) or "" for key, text in table.items()} for lang in ("en", "zh")}
    return _script_json(data)


def _script_json(value: Any) -> Markup:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


class AppViews:
    """The views the loaded plugins registered, for one host: which tool names which view, and
    each view's document for a member."""

    def __init__(self, host: Host) -> None:
        from hostd.web.views import collect_views

        self.host = host
        self.views: dict[str, AppView] = {}
        self.by_tool: dict[str, str] = {}
        self._templates: dict[str, Any] = {}
        if not host.loaded.profile.apps:
            return
        for plugin, registered in collect_views(host).items():
            if not registered.apps or registered.templates is None:
                continue
            self._templates[plugin] = registered.templates
            for name, (template, tools, title, data, diagram) in registered.apps.items():
                served = tuple(self._served(plugin, tool) for tool in tools)
                if served[0] is None:
                    continue  # the profile does not serve the tool the view stands for
                view = AppView(plugin, name, template, tuple(s for s in served if s), title, data, diagram)
                self.views[view.uri] = view
                for tool in view.tools:
                    self.by_tool.setdefault(tool, view.uri)

    def _served(self, plugin: str, tool: str) -> str | None:
        selection = self.host.loaded.profile.tools.get(plugin)
        name = (selection.prefix if selection else "") + tool
        spec = self.host.tools.get(name)
        return name if spec is not None and spec.plugin == plugin else None

    @functools.cached_property
    def _environment(self) -> Any:
        return environment(self._templates)

    def serves(self, member: Member | None, uri: str) -> AppView | None:
        """The view at ``uri`` when this member may open it (the profile serves its first tool)."""
        view = self.views.get(uri)
        if view is None or not self.host.access.may(member, view.tools[0]):
            return None
        return view

    def document(self, view: AppView, member: Member | None, language: Language) -> str:
        """The view's whole HTML for ``member``: write controls only for tools they may call."""
        plugin = view.plugin

        def served(tool: str) -> str | None:
            name = self._served(plugin, tool)
            return name if name is not None and self.host.access.may(member, name) else None

        def t(en: str, zh: str) -> str:
            return render(Text(en=en, zh=zh), language) or ""

        def speak(lang: Language) -> Any:
            return lambda en, zh: render(Text(en=en, zh=zh), lang) or ""

        template = self._environment.get_template(f"{plugin}/{view.template}")
        body = template.render(
            data=view.data,
            t=t,
            can=lambda tool: served(tool) is not None,
            strings=_strings,
            as_json=_script_json,
            both=lambda en, zh: Text(en=en, zh=zh),
            # The dashboard's macros, drawn as <template>s (see host/macros.html's part and each):
            # once per language, for a slot record, with no dashboard links (a view has no pages).
            languages=("en", "zh"),
            speak=speak,
            slot=Slot,
            names=SlotNames,
            opens=lambda path="", other=None: False,
            url=lambda path="", **query: "#",
        )
        style, _ = page_style()
        config = {
            "plugin": plugin,
            "root": view.name,
            "language": language,
            "tools": {name: served(name) for name in _tool_names(self.host, plugin)},
            "working": {lang: speak(lang)(en="Working…", zh="处理中……") for lang in ("en", "zh")},
        }
        shell = self._environment.get_template("host/app.html")
        return str(
            shell.render(
                csp=APP_CSP,
                language=language,
                title=render(view.title, language) or view.name,
                name=view.name,
                waiting=t(en="Waiting for the tool's answer…", zh="等待工具的回答……"),
                style=style + Markup(_static("view.css")),
                runtime=Markup(_static("view.js")),
                diagram=Markup(_static("vendor/mermaid/mermaid.min.js") + "\n" + _static("diagram.js"))
                if view.diagram
                else None,
                config=_script_json(config),
                body=Markup(body),
            )
        )


def _tool_names(host: Host, plugin: str) -> list[str]:
    """The plugin's tools by their own (unprefixed) names."""
    selection = host.loaded.profile.tools.get(plugin)
    prefix = selection.prefix if selection else ""
    return [
        spec.name[len(prefix) :]
        for spec in host.tools.values()
        if spec.plugin == plugin and spec.name.startswith(prefix)
    ]
