"""hostd plugin ``wechat``: WeChat articles to Markdown files, and digests of Markdown folders.

Importing this module stays cheap: parsers, HTTP and the browser are imported inside the
tool calls that need them.
"""

from __future__ import annotations

from hostd import PluginContext, RegisterTool, hookimpl
from hostd_wechat.models import Settings
from hostd_wechat.tools.digest import summarize_articles
from hostd_wechat.tools.read import read_wechat_articles


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    register(
        read_wechat_articles,
        title="Read WeChat articles to Markdown",
        tier="core",
        destructive=True,  # overwrite=true replaces files of the same name
        open_world=True,
    )
    register(
        summarize_articles,
        title="Summarize Markdown articles",
        destructive=True,  # overwrite=true replaces the digest file at output_path
        idempotent=True,
    )


#: The plugin's icon (two speech bubbles, in WeChat's green): the host serves it inline on each of its tools.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#07c160"/>'
    '<ellipse cx="13" cy="13" rx="8" ry="6.5" fill="#fff"/>'
    '<ellipse cx="20.5" cy="19.5" rx="6.5" ry="5.5" fill="#fff" stroke="#07c160" stroke-width="1.5"/>'
    "</svg>"
)


@hookimpl
def hostd_icon() -> str:
    return ICON
