"""Assembling a host from its plugins' answers: settings, roots, icons and the profile's tools.

Plain functions of what the plugins returned and the config, each raising a ``HostError`` that
names the config key (or the plugin) at fault, so ``Host`` keeps only the order of the steps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from hostd.core.config import LoadedConfig, format_validation_error
from hostd.core.errors import HostError
from hostd.core.tools import ToolSpec

#: The largest plugin icon (``hostd_icon``): it travels inline on each of the plugin's tools.
MAX_ICON_BYTES = 4096
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
#: What in an icon would make a client reach the network to draw it.
_NETWORK_REFERENCE = re.compile(r"(?i)\b(?:https?|ftp):|=\s*[\"']//")


def validate_settings(name: str, model: type[BaseModel] | None, raw: dict[str, Any]) -> Any:
    """The plugin's settings section validated with its model (a ``HostError`` naming the key)."""
    if model is None:
        if raw:
            raise HostError(f"plugins.{name}: this plugin takes no settings (got {', '.join(sorted(raw))})")
        return None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise HostError(
            f"plugins.{name}: hostd_settings_model must return a pydantic BaseModel subclass or None"
            f" (got {model!r})"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise HostError(
            f"invalid plugin settings\n{format_validation_error(exc, f'plugins.{name}')}"
        ) from None


def narrow_roots(name: str, host_roots: list[Path] | None, plugin_roots: Any) -> list[Path] | None:
    """A plugin's ``allowed_roots``: only ever inside the host-wide ones."""
    if plugin_roots is None:
        return host_roots
    if not isinstance(plugin_roots, list) or not all(isinstance(r, str) for r in plugin_roots):
        raise HostError(f"plugins.{name}.allowed_roots: must be a list of folder paths")
    narrowed = [Path(r).expanduser() for r in plugin_roots]
    if host_roots is not None:
        resolved_host = [r.resolve() for r in host_roots]
        for root in narrowed:
            if not any(root.resolve().is_relative_to(h) for h in resolved_host):
                raise HostError(
                    f"plugins.{name}.allowed_roots: {root} is outside the host-wide allowed_roots "
                    "(a plugin may only narrow them)"
                )
    return narrowed


def checked_icon(name: str, svg: object) -> str:
    """A plugin's icon (``hostd_icon``) as SVG markup, refused when it is not small, offline SVG."""
    if not isinstance(svg, str) or not svg.lstrip().startswith("<svg") or len(svg.encode()) > MAX_ICON_BYTES:
        raise HostError(
            f"plugin {name!r}: hostd_icon must return SVG markup of at most {MAX_ICON_BYTES} bytes"
        )
    if _NETWORK_REFERENCE.search(svg.replace(SVG_NAMESPACE, "")):
        raise HostError(f"plugin {name!r}: hostd_icon's SVG must not refer to the network")
    return svg


def select_tools(
    loaded: LoadedConfig, plugin: str, offered: list[ToolSpec], *, into: dict[str, ToolSpec]
) -> None:
    """Add the plugin's tools the profile selects (``tools.<plugin>``: include, exclude, tier,
    prefix) to ``into``; a selection naming a tool the plugin lacks, or a name two plugins offer,
    is a ``HostError`` naming the config key."""
    selection = loaded.profile.tools.get(plugin)
    names = [spec.name for spec in offered]
    if len(set(names)) != len(names):
        raise HostError(f"plugin {plugin!r} registers a tool name twice")
    if selection is not None:
        where = f"profiles.{loaded.profile_name}.tools.{plugin}"
        for key, listed in (("include", selection.include or []), ("exclude", selection.exclude)):
            missing = sorted(set(listed) - set(names))
            if missing:
                raise HostError(
                    f"{where}.{key}: plugin has no tool {', '.join(missing)}; it has {', '.join(names)}"
                )
        if selection.tier != "all":
            outside = sorted(
                spec.name
                for spec in offered
                if spec.tier != selection.tier and spec.name in (selection.include or [])
            )
            if outside:
                raise HostError(
                    f"{where}.include: {', '.join(outside)} not in tier {selection.tier!r}; "
                    f"use tier: all to include it"
                )
    for spec in offered:
        if selection is not None:
            if selection.tier != "all" and spec.tier != selection.tier:
                continue
            if selection.include is not None and spec.name not in selection.include:
                continue
            if spec.name in selection.exclude:
                continue
            if selection.prefix:
                spec = spec.renamed(selection.prefix + spec.name)
        if spec.name in into:
            other = into[spec.name].plugin
            raise HostError(
                f"tool name collision: {spec.name!r} is offered by plugins {other!r} and {plugin!r}; "
                f"give one a prefix (profiles.{loaded.profile_name}.tools.{plugin}.prefix) "
                "or exclude it"
            )
        into[spec.name] = spec
