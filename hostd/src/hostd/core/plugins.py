"""The plugin manager factory: load only the plugins a profile names, by entry-point name."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

import pluggy

from hostd import hookspecs
from hostd.core.errors import HostError

ENTRY_POINT_GROUP = "hostd"


def installed_plugins() -> dict[str, EntryPoint]:
    """Every plugin installed in this environment, by entry-point name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def make_plugin_manager(
    names: list[str] | None,
    *,
    extra_plugins: Mapping[str, object] | None = None,
) -> tuple[pluggy.PluginManager, list[str]]:
    """A fresh manager holding the named plugins (``None``: every installed one).

    ``extra_plugins`` are in-line plugin objects (tests, embedding) that count as installed
    under their key. Returns the manager and the plugin names in load order. A name that is
    not installed is a start-up error that lists what is.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    extra = dict(extra_plugins or {})
    installed = installed_plugins()
    wanted = list(names) if names is not None else [*installed, *(n for n in extra if n not in installed)]
    unknown = [name for name in wanted if name not in installed and name not in extra]
    if unknown:
        available = ", ".join(sorted({*installed, *extra})) or "(none)"
        raise HostError(
            f"plugin(s) not installed: {', '.join(unknown)}; installed plugins: {available}", exit_code=2
        )
    loaded: list[str] = []
    for name in dict.fromkeys(wanted):
        try:
            plugin = extra[name] if name in extra else installed[name].load()
        except Exception as exc:  # a broken install must name itself, not crash with a traceback
            raise HostError(
                f"plugin {name!r} failed to load ({installed[name].value}): {type(exc).__name__}: {exc}",
                exit_code=2,
            ) from exc
        manager.register(plugin, name=name)
        loaded.append(name)
    manager.check_pending()
    return manager, loaded
