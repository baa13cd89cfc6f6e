"""The plugin API is one module, ``hostd.api``, that depends on none of the host's machinery."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import hostd.api
import hostd.paging

import hostd

HOSTD_SRC = Path(hostd.__file__).parent


def test_hostd_exports_exactly_the_api_module() -> None:
    assert hostd.__all__ == hostd.api.__all__
    for name in hostd.__all__:
        assert getattr(hostd, name) is getattr(hostd.api, name), name


def _words(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_the_stability_promise_reads_the_same_in_the_package_and_the_readme() -> None:
    promise = _words(hostd.__doc__ or "").split(
        "hostd: a small MCP host that serves tools from pluggy plugins. "
    )[1]
    readme = _words((HOSTD_SRC.parents[2] / "README.md").read_text(encoding="utf-8"))
    assert promise.startswith("The plugin API is what this module exports")
    # The README names the module rather than saying "this module"; the rest is word for word.
    assert promise.replace("this module exports", "hostd exports") in readme


def test_importing_the_api_loads_no_host_machinery() -> None:
    """A plugin importing ``hostd`` pays for the API only: no server, no host, no MCP SDK."""
    code = "import sys, hostd; print('\\n'.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    machinery = {
        "hostd.core.host",
        "hostd.core.context",
        "hostd.core.tools",
        "hostd.protocol.server",
        "hostd.protocol.http",
        "hostd.cli.main",
    }
    assert not loaded & machinery, sorted(loaded & machinery)
    assert not any(name == "mcp" or name.startswith("mcp.") for name in loaded)


def _imports(path: Path, module: str) -> set[str]:
    """The ``hostd`` modules ``path`` imports anywhere (under TYPE_CHECKING and in functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("hostd.") and name != module}


def _import_graph() -> dict[str, set[str]]:
    modules = {}
    for path in HOSTD_SRC.rglob("*.py"):
        parts = ["hostd", *path.relative_to(HOSTD_SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph = {}
    for module, path in modules.items():
        graph[module] = {name for name in _imports(path, module) if name in modules}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(graph[start])
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(graph.get(module, ()))
    return seen


def test_the_api_module_and_the_host_modules_that_implement_it_form_no_import_circle() -> None:
    graph = _import_graph()
    for module in (
        "hostd.api",
        "hostd.core.context",
        "hostd.core.tools",
        "hostd.hookspecs",
        "hostd.core.records",
    ):
        assert module not in _reachable(graph, module), f"{module} imports itself through other modules"
    # The API depends only on the modules of public data types, never on the host's implementations.
    assert _reachable(graph, "hostd.api") <= {
        "hostd.core.arguments",
        "hostd.core.commands",
        "hostd.core.errors",
        "hostd.core.i18n",
        "hostd.core.ids",
        "hostd.core.jsonvalue",
        "hostd.core.prompts",
        "hostd.core.records",
        "hostd.core.resources",
        "hostd.core.textlength",
        "hostd.core.view_api",
        "hostd.core.view_forms",
    }, _reachable(graph, "hostd.api")


# --- no Any in the public surface ---------------------------------------------------------


def _holds_any(hint: object) -> bool:
    if hint is Any:
        return True
    if isinstance(hint, TypeVar):
        return False
    if typing.get_origin(hint) is typing.Annotated:
        return _holds_any(typing.get_args(hint)[0])
    return any(
        _holds_any(arg) for arg in typing.get_args(hint) if not isinstance(arg, str | int | float | bool)
    )


def _hints(target: object) -> dict[str, object]:
    """``target``'s annotations, resolved in its own module, and the names its module imports only
    for type checkers (``hostd_db``'s ``Database`` and ``Connection``)."""
    import hostd_db

    return typing.get_type_hints(target, localns=dict(vars(hostd_db)), include_extras=True)


def _annotated_parts(name: str, value: object) -> Iterator[tuple[str, object]]:
    """Every annotation a plugin author meets in ``value``: a class's fields and the parameters and
    returns of its own methods and properties, a function's signature, a type alias itself."""
    if inspect.isclass(value):
        yield from _hints(value).items()
        for attribute, member in vars(value).items():
            if attribute.startswith("model_") or (
                attribute.startswith("_") and attribute not in ("__init__", "__call__")
            ):
                continue
            function = member.fget if isinstance(member, property) else member
            function = getattr(function, "__func__", function)
            if inspect.isfunction(function):
                for part, hint in _hints(function).items():
                    yield f"{attribute}.{part}", hint
    elif inspect.isfunction(value):
        yield from _hints(value).items()
    else:
        yield "", value


def test_no_public_name_is_typed_any() -> None:
    found: set[tuple[str, str]] = set()
    for module, names in (("hostd.api", hostd.api.__all__), ("hostd.paging", hostd.paging.__all__)):
        for name in names:
            for part, hint in _annotated_parts(name, getattr(sys.modules[module], name)):
                if _holds_any(hint):
                    found.add((name, part))
    assert found == set(), "type these without Any (JSONValue for data, a Protocol for a service)"


WINGS = ("hostd.protocol", "hostd.team", "hostd.web", "hostd.cli")


def _module_level_imports(path: Path) -> set[str]:
    """The modules ``path`` imports when it is imported: top-level statements only (an import inside
    a function, or under ``TYPE_CHECKING``, runs later or never)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_core_never_imports_a_wing_at_module_level() -> None:
    """The core (and the plugin API above it) stands without the protocol, team, web and CLI wings:
    a wing may import the core, never the other way round when a module loads."""
    core = [
        *(HOSTD_SRC / "core").rglob("*.py"),
        *(HOSTD_SRC / name for name in ("api.py", "paging.py", "hookspecs.py")),
    ]
    assert len(core) > 10
    upward = {
        f"{path.relative_to(HOSTD_SRC)} -> {name}"
        for path in core
        for name in _module_level_imports(path)
        if name.startswith(WINGS)
    }
    assert upward == set()


def test_only_the_protocol_wing_imports_the_mcp_sdk() -> None:
    outside = {
        f"{path.relative_to(HOSTD_SRC)} -> {name}"
        for path in HOSTD_SRC.rglob("*.py")
        if not path.is_relative_to(HOSTD_SRC / "protocol")
        for name in _every_import(path)
        if name == "mcp" or name.startswith(("mcp.", "mcp_types"))
    }
    assert outside == set()


def _every_import(path: Path) -> set[str]:
    """Every module ``path`` imports anywhere, hostd's or not."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found
