"""Every plugin has the same rooms with the same meaning, as the README describes them.

The rooms are listed once, in ``ROOMS``; the README's "Writing a plugin" list must name the same
rooms (``test_the_readme_names_the_rooms_the_tree_has``), and each installed plugin must have
every room it needs: the first three always, the store's when it declares tables
(``hostd_database_schema``), ``links.py`` when it offers or uses services
(``hostd_register_services``), the views' when it adds dashboard pages
(``hostd_register_views``). summary-writer and wechat keep no store, so they need the first
three only. Two rooms of the store are asked for only where the plugin has what they hold:
``store/refusals.py`` where the store refuses (a store module raises ``ToolError``/``CodedError``
or imports the refusals), ``search.py`` where a tool searches (takes a ``query`` argument): the
example plugin ``notes`` refuses but does not search.

A plugin that has not moved into a room yet is listed in ``PENDING`` with why: its test is an
``xfail(strict=True)``, so moving in (or a check that stops biting) fails until the line goes.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.core.plugins import installed_plugins
from hostd_errors import Reason

from hostd import ToolOutput

README = Path(__file__).resolve().parents[1] / "README.md"


@dataclass(frozen=True)
class Plugin:
    """An installed plugin: its entry-point name, its ``plugin`` module and its package folder."""

    name: str
    module: ModuleType

    @property
    def package(self) -> str:
        return self.module.__name__.rpartition(".")[0]

    @property
    def folder(self) -> Path:
        return Path(inspect.getfile(self.module)).parent

    def implements(self, hook: str) -> bool:
        return callable(getattr(self.module, hook, None))

    @property
    def has_store(self) -> bool:
        return self.implements("hostd_database_schema")


def _plugins() -> dict[str, Plugin]:
    found = {}
    for name, entry_point in sorted(installed_plugins().items()):
        module = entry_point.load()
        if isinstance(module, ModuleType) and module.__name__.startswith("hostd_"):
            found[name] = Plugin(name, module)
    return found


PLUGINS = _plugins()


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute names; relative imports as written, dots first)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


_SPECS: dict[str, dict[str, Any]] = {}


def _tool_specs(plugin: str) -> dict[str, Any]:
    """The tools ``plugin`` registers (its ``ToolSpec``s), from a host built once per plugin."""
    if plugin not in _SPECS:
        import tempfile

        with tempfile.TemporaryDirectory() as data_dir:
            loaded = config_from_mapping(
                {"profiles": {"default": {"plugins": [plugin]}}}, data_dir=Path(data_dir)
            )
            _SPECS[plugin] = dict(Host(loaded).tools)
    return _SPECS[plugin]


# --- the rooms ----------------------------------------------------------------------------------


def _plugin_py(plugin: Plugin) -> None:
    assert plugin.module.__name__ == f"{plugin.package}.plugin", "the entry point is not plugin.py"
    assert plugin.implements("hostd_register_tools"), "plugin.py does not register the tools"


def _models_py(plugin: Plugin) -> None:
    models = importlib.import_module(f"{plugin.package}.models")
    outputs = [
        cls
        for _, cls in inspect.getmembers(models, inspect.isclass)
        if cls.__module__ == models.__name__ and issubclass(cls, ToolOutput)
    ]
    assert outputs, "models.py declares no *Output model"


def _tools(plugin: Plugin) -> None:
    assert (plugin.folder / "tools" / "__init__.py").is_file() or (plugin.folder / "tools.py").is_file()
    elsewhere = {
        name: spec.function.__module__
        for name, spec in _tool_specs(plugin.name).items()
        if not spec.function.__module__.startswith(f"{plugin.package}.tools")
    }
    assert elsewhere == {}, "tool functions outside tools/"


def _store(plugin: Plugin) -> None:
    assert (plugin.folder / "store" / "__init__.py").is_file(), "no store/ package"


def _store_schema(plugin: Plugin) -> None:
    assert (plugin.folder / "store" / "schema.py").is_file(), "no store/schema.py"
    schema = importlib.import_module(f"{plugin.package}.store.schema")
    assert callable(getattr(schema, "schema", None)), "store/schema.py has no schema()"
    hook = ast.parse(inspect.getsource(plugin.module.hostd_database_schema))
    sources = {node.module for node in ast.walk(hook) if isinstance(node, ast.ImportFrom)}
    assert f"{plugin.package}.store.schema" in sources, "hostd_database_schema does not use store/schema.py"


def _store_refusals(plugin: Plugin) -> None:
    assert (plugin.folder / "store" / "refusals.py").is_file(), "no store/refusals.py"
    refusals = importlib.import_module(f"{plugin.package}.store.refusals")
    tables = [
        value
        for value in vars(refusals).values()
        if isinstance(value, dict) and value and all(isinstance(item, Reason) for item in value.values())
    ]
    assert tables, "store/refusals.py holds no table of Reason (name -> Reason)"
    # The Chinese sentences end as Chinese does (one once ended "...无人持有." from a shared "."):
    ascii_stops = sorted(
        name
        for table in tables
        for name, reason in table.items()
        if any(sentence.endswith(".") for sentence in (reason.message_zh, reason.hint_zh))
    )
    assert ascii_stops == [], "a Chinese sentence ends with an ASCII full stop"


def _search_py(plugin: Plugin) -> None:
    path = plugin.folder / "search.py"
    assert path.is_file(), "no search.py"
    store = {name for name in _imports(path) if name.startswith((f"{plugin.package}.store", ".store"))}
    assert store == set(), "search.py (the query language) imports the store"


def _links_py(plugin: Plugin) -> None:
    assert (plugin.folder / "links.py").is_file(), "services registered, but no links.py"


def _views(plugin: Plugin) -> None:
    assert (plugin.folder / "views.py").is_file(), "pages registered, but no views.py"
    assert sorted((plugin.folder / "templates").glob("*.html")), "no Jinja templates in templates/"


@dataclass(frozen=True)
class Room:
    check: Callable[[Plugin], None]
    needed: Callable[[Plugin], bool]


def _always(plugin: Plugin) -> bool:
    return True


def _with_store(plugin: Plugin) -> bool:
    return plugin.has_store


#: What a store module names when it refuses: the error types, or the refusals room itself.
_REFUSING = {"ToolError", "CodedError", "refusals"}


def _store_refuses(plugin: Plugin) -> bool:
    """A store module (besides ``refusals.py``) raises an error of the protocol or imports the refusals."""
    if not plugin.has_store:
        return False
    for path in (plugin.folder / "store").glob("*.py"):
        if path.name == "refusals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id in _REFUSING:
                return True
            if isinstance(node, ast.ImportFrom):
                module = (node.module or "").rpartition(".")[2]
                if ({alias.name for alias in node.names} | {module}) & _REFUSING:
                    return True
    return False


def _searches(plugin: Plugin) -> bool:
    """A tool of the plugin takes a ``query``: what a user typed, which ``search.py`` reads."""
    return plugin.has_store and any(
        "query" in inspect.signature(spec.function).parameters for spec in _tool_specs(plugin.name).values()
    )


#: Room -> what holds it to its meaning, and which plugins need it. The README lists the same keys.
ROOMS: dict[str, Room] = {
    "plugin.py": Room(_plugin_py, _always),
    "models.py": Room(_models_py, _always),
    "tools/": Room(_tools, _always),
    "store/": Room(_store, _with_store),
    "store/schema.py": Room(_store_schema, _with_store),
    "store/refusals.py": Room(_store_refusals, _store_refuses),
    "search.py": Room(_search_py, _searches),
    "links.py": Room(_links_py, lambda plugin: plugin.implements("hostd_register_services")),
    "views.py": Room(_views, lambda plugin: plugin.implements("hostd_register_views")),
}

#: (plugin, room) -> why it has not moved in yet. Each is an xfail(strict=True): remove the line
#: when the plugin moves in.
PENDING: dict[tuple[str, str], str] = {}


def _cases() -> Iterator[Any]:
    for plugin in PLUGINS.values():
        for room_name, room in ROOMS.items():
            if not room.needed(plugin):
                continue
            reason = PENDING.get((plugin.name, room_name))
            marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)] if reason else []
            yield pytest.param(plugin.name, room_name, marks=marks, id=f"{plugin.name}-{room_name}")


@pytest.mark.parametrize(("plugin", "room"), list(_cases()))
def test_every_plugin_has_the_rooms_it_needs(plugin: str, room: str) -> None:
    ROOMS[room].check(PLUGINS[plugin])


def _stale(pending: Mapping[tuple[str, str], str]) -> list[tuple[str, str]]:
    """The lines of ``pending`` that excuse nothing: an unknown plugin or room, or a room the
    plugin does not need."""
    return [
        (plugin, room)
        for plugin, room in pending
        if plugin not in PLUGINS or room not in ROOMS or not ROOMS[room].needed(PLUGINS[plugin])
    ]


def test_every_pending_room_is_one_the_plugin_needs() -> None:
    """A ``PENDING`` line for a room the plugin does not need would excuse nothing. ``PENDING``
    is often empty, so three lines that excuse nothing go in beside it: they, and only they,
    must come back (a stale line of ``PENDING`` would come back too)."""
    not_needed = next(
        (plugin.name, name)
        for plugin in PLUGINS.values()
        for name, room in ROOMS.items()
        if not room.needed(plugin)
    )
    excusing_nothing = {("no-such-plugin", "tools/"): "", ("tasks", "no-such-room"): "", not_needed: ""}
    assert _stale({**PENDING, **excusing_nothing}) == list(excusing_nothing)


def test_refusals_and_search_are_asked_only_where_the_plugin_has_them() -> None:
    """The shipped stores refuse and search; the example's refuses only (``add_note``'s title)."""
    asked = {
        name: [room for room in ("store/refusals.py", "search.py") if ROOMS[room].needed(plugin)]
        for name, plugin in PLUGINS.items()
        if plugin.has_store
    }
    assert asked == {
        "deep-thinking": ["store/refusals.py", "search.py"],
        "memory": ["store/refusals.py", "search.py"],
        "notes": ["store/refusals.py"],
        "tasks": ["store/refusals.py", "search.py"],
    }


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_every_tool_has_a_title(plugin: str) -> None:
    """The title is what an IDE shows a person; the name is for the model."""
    specs = _tool_specs(plugin)
    assert specs, f"{plugin} registers no tools"
    untitled = sorted(name for name, spec in specs.items() if not (spec.title or "").strip())
    assert untitled == []


def _module_graph(plugin: Plugin) -> dict[str, set[str]]:
    """Each module of the plugin -> the plugin's modules it imports, anywhere in it (a function's
    import too, and ``from package import module`` as that module)."""
    root = plugin.folder
    modules = {}
    for path in root.rglob("*.py"):
        parts = [plugin.package, *path.relative_to(root).with_suffix("").parts]
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules.keys()
                found |= submodules
                if node.module in modules and len(submodules) < len(node.names):
                    found.add(node.module)
        graph[name] = found - {name}
    return graph


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_no_plugin_module_imports_itself_in_a_circle(plugin: str) -> None:
    """Rooms depend one way (the store on the query language, resources on the tools, never back):
    a circle, even through an import inside a function, means two rooms hold one thing."""
    try:
        tuple(graphlib.TopologicalSorter(_module_graph(PLUGINS[plugin])).static_order())
    except graphlib.CycleError as circle:
        pytest.fail(f"import circle: {' -> '.join(circle.args[1])}")


# --- the README -------------------------------------------------------------------------------


def readme_rooms_section() -> str:
    """The README's paragraph and list of the rooms ("Writing a plugin")."""
    text = README.read_text(encoding="utf-8")
    start = text.index("Each plugin in this repository has the same rooms")
    return text[start : text.index("\n\n", text.index("\n- ", start))]


def readme_rooms() -> list[str]:
    """The rooms the README's list names: the first path of each item."""
    return re.findall(r"^\s*- `([^`]+)`", readme_rooms_section(), flags=re.MULTILINE)


def test_the_readme_names_the_rooms_the_tree_has() -> None:
    assert readme_rooms() == list(ROOMS)


def test_the_readme_names_no_module_a_plugin_lacks() -> None:
    """Every ``name.py`` or ``folder/`` the rooms' paragraph mentions exists (in some plugin, or
    from the repository's root): it once promised a ``store.py`` no plugin had."""
    mentioned = set(re.findall(r"`([a-z_/]+(?:\.py|/))`", readme_rooms_section()))
    assert mentioned, "the rooms' paragraph names no files"
    repository = README.parent
    missing = sorted(
        path
        for path in mentioned
        if not (repository / path).exists() and not any((p.folder / path).exists() for p in PLUGINS.values())
    )
    assert missing == []
