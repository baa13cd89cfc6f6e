"""The plugin contract: loading, settings, services, life cycle, naming rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
from hostd.core.config import config_from_mapping
from hostd.core.errors import HostError
from hostd.core.host import Host
from hostd_testing import envelope_of, in_memory_client
from pydantic import BaseModel, Field

from hostd import ToolOutput, hookimpl


def make_host(
    data_dir: Path,
    plugins: dict[str, object],
    config: dict[str, Any] | None = None,
    profile_plugins: list[str] | None = None,
) -> Host:
    raw = dict(config or {})
    raw.setdefault("profiles", {"default": {"plugins": profile_plugins or list(plugins)}})
    return Host(config_from_mapping(raw, data_dir=data_dir), extra_plugins=plugins)


class Answer(ToolOutput):
    value: str


def tool_named(name: str, description: str = "A tool.") -> Any:
    def tool(x: Annotated[str, Field(description="an input")] = "") -> Answer:
        return Answer(value=name)

    tool.__name__ = name
    tool.__doc__ = description
    return tool


class OneToolPlugin:
    def __init__(self, *names: str) -> None:
        self.names = names

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        for name in self.names:
            register(tool_named(name))


@pytest.mark.smoke
def test_loads_only_the_plugins_the_profile_names(hostd_data_dir: Path) -> None:
    host = make_host(
        hostd_data_dir, {"a": OneToolPlugin("t_a"), "b": OneToolPlugin("t_b")}, profile_plugins=["b"]
    )
    assert host.plugin_names == ["b"]
    assert list(host.tools) == ["t_b"]


def test_a_plugin_that_is_not_installed_is_a_startup_error_listing_installed(hostd_data_dir: Path) -> None:
    with pytest.raises(HostError) as caught:
        make_host(hostd_data_dir, {"a": OneToolPlugin("t_a")}, profile_plugins=["a", "missing"])
    assert caught.value.exit_code == 2
    assert "missing" in str(caught.value)
    assert "installed plugins:" in str(caught.value)
    assert "a" in str(caught.value)


def test_tool_name_collision_names_both_plugins(hostd_data_dir: Path) -> None:
    with pytest.raises(HostError) as caught:
        make_host(hostd_data_dir, {"first": OneToolPlugin("same"), "second": OneToolPlugin("same")})
    message = str(caught.value)
    assert "'same'" in message
    assert "'first'" in message
    assert "'second'" in message
    assert "prefix" in message


def test_a_prefix_resolves_a_collision(hostd_data_dir: Path) -> None:
    config = {
        "profiles": {"default": {"plugins": ["first", "second"], "tools": {"second": {"prefix": "two_"}}}}
    }
    host = make_host(
        hostd_data_dir, {"first": OneToolPlugin("same"), "second": OneToolPlugin("same")}, config
    )
    assert sorted(host.tools) == ["same", "two_same"]
    assert host.tools["two_same"].plugin == "second"


def test_include_and_exclude_select_tools(hostd_data_dir: Path) -> None:
    plugin = OneToolPlugin("keep", "drop", "other")
    include = {"profiles": {"default": {"plugins": ["p"], "tools": {"p": {"include": ["keep", "drop"]}}}}}
    assert sorted(make_host(hostd_data_dir, {"p": plugin}, include).tools) == ["drop", "keep"]
    exclude = {"profiles": {"default": {"plugins": ["p"], "tools": {"p": {"exclude": ["drop"]}}}}}
    assert sorted(make_host(hostd_data_dir, {"p": plugin}, exclude).tools) == ["keep", "other"]


class TieredPlugin:
    """Two everyday tools in the ``core`` tier, two more only in ``all``."""

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(tool_named("daily"), tier="core")
        register(tool_named("often"), tier="core")
        register(tool_named("rare"))
        register(tool_named("admin"), tier="all")


def tiered(selection: dict[str, Any]) -> dict[str, Any]:
    return {"profiles": {"default": {"plugins": ["p"], "tools": {"p": selection}}}}


def test_tier_core_serves_only_the_core_tools_and_all_is_the_default(hostd_data_dir: Path) -> None:
    plugin: dict[str, object] = {"p": TieredPlugin()}
    assert list(make_host(hostd_data_dir, plugin).tools) == ["daily", "often", "rare", "admin"]
    assert list(make_host(hostd_data_dir, plugin, tiered({"tier": "all"})).tools) == [
        "daily",
        "often",
        "rare",
        "admin",
    ]
    assert list(make_host(hostd_data_dir, plugin, tiered({"tier": "core"})).tools) == ["daily", "often"]


def test_include_exclude_and_prefix_apply_on_top_of_the_tier(hostd_data_dir: Path) -> None:
    plugin: dict[str, object] = {"p": TieredPlugin()}
    excluded = make_host(hostd_data_dir, plugin, tiered({"tier": "core", "exclude": ["often"]}))
    assert list(excluded.tools) == ["daily"]
    included = make_host(
        hostd_data_dir, plugin, tiered({"tier": "core", "include": ["often"], "prefix": "x_"})
    )
    assert list(included.tools) == ["x_often"]


def test_including_a_tool_outside_the_tier_is_a_config_error(hostd_data_dir: Path) -> None:
    with pytest.raises(HostError, match=r"profiles\.default\.tools\.p\.include: rare not in tier 'core'"):
        make_host(
            hostd_data_dir, {"p": TieredPlugin()}, tiered({"tier": "core", "include": ["daily", "rare"]})
        )


def test_an_unknown_tier_is_refused_in_the_config_and_at_registration(hostd_data_dir: Path) -> None:
    with pytest.raises(HostError, match=r"profiles\.default\.tools\.p\.tier"):
        make_host(hostd_data_dir, {"p": TieredPlugin()}, tiered({"tier": "everyday"}))

    class BadTier:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(tool_named("t"), tier="sometimes")

    with pytest.raises(HostError, match="tier must be one of core, all"):
        make_host(hostd_data_dir, {"p": BadTier()})


def test_selecting_a_tool_the_plugin_lacks_is_a_config_error(hostd_data_dir: Path) -> None:
    config = {"profiles": {"default": {"plugins": ["p"], "tools": {"p": {"exclude": ["typo"]}}}}}
    with pytest.raises(HostError, match=r"profiles\.default\.tools\.p\.exclude: plugin has no tool typo"):
        make_host(hostd_data_dir, {"p": OneToolPlugin("real")}, config)


@pytest.mark.parametrize("bad_name", ["has space", "x" * 65, "", "slash/name", "ünï"])
def test_tool_names_must_match_the_pattern(hostd_data_dir: Path, bad_name: str) -> None:
    with pytest.raises(HostError, match="must match"):
        make_host(hostd_data_dir, {"p": OneToolPlugin(bad_name)})


@pytest.mark.parametrize("description", ["", "x" * 1025])
def test_descriptions_are_1_to_1024_characters(hostd_data_dir: Path, description: str) -> None:
    class Plugin:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(tool_named("t", description))

    with pytest.raises(HostError, match="description of 1 to 1024"):
        make_host(hostd_data_dir, {"p": Plugin()})


@pytest.mark.parametrize("reserved", ["status", "message", "error", "metadata"])
def test_output_models_may_not_declare_reserved_keys(hostd_data_dir: Path, reserved: str) -> None:
    model = type("Bad", (ToolOutput,), {"__annotations__": {reserved: str}})

    def bad() -> ToolOutput:
        """Bad."""
        raise AssertionError

    bad.__annotations__["return"] = model

    class Plugin:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(bad)

    with pytest.raises(HostError, match=f"reserved key.*{reserved}"):
        make_host(hostd_data_dir, {"p": Plugin()})


def test_every_parameter_needs_a_description(hostd_data_dir: Path) -> None:
    def undocumented(x: str) -> Answer:
        """Has an undescribed parameter."""
        return Answer(value=x)

    class Plugin:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(undocumented)

    with pytest.raises(HostError, match="parameter 'x' has no description"):
        make_host(hostd_data_dir, {"p": Plugin()})


def test_settings_are_validated_by_the_plugins_model_naming_the_location(
    hostd_data_dir: Path, probe: object
) -> None:
    config = {"plugins": {"probe": {"repeat_limit": 0}}}
    with pytest.raises(HostError) as caught:
        make_host(hostd_data_dir, {"probe": probe}, config)
    assert "plugins.probe.repeat_limit" in str(caught.value)
    config = {"plugins": {"probe": {"unknown_key": 1}}}
    with pytest.raises(HostError, match=r"plugins\.probe\.unknown_key: unknown key"):
        make_host(hostd_data_dir, {"probe": probe}, config)
    host = make_host(hostd_data_dir, {"probe": probe}, {"plugins": {"probe": {"greeting": "salut"}}})
    assert host.contexts["probe"].settings.greeting == "salut"


def test_a_plugin_without_a_settings_model_refuses_settings(hostd_data_dir: Path) -> None:
    with pytest.raises(HostError, match=r"plugins\.p: this plugin takes no settings"):
        make_host(hostd_data_dir, {"p": OneToolPlugin("t")}, {"plugins": {"p": {"x": 1}}})


def test_each_plugin_gets_its_own_data_folder(hostd_data_dir: Path, probe: object) -> None:
    host = make_host(hostd_data_dir, {"probe": probe, "other": OneToolPlugin("o")})
    assert host.contexts["probe"].data_dir == hostd_data_dir / "probe"
    assert host.contexts["other"].data_dir == hostd_data_dir / "other"
    assert (hostd_data_dir / "probe").is_dir()


class Recorder:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name, self.events = name, events

    @hookimpl
    def hostd_startup(self, context: Any) -> None:
        self.events.append(f"start {context.name}")

    @hookimpl
    def hostd_shutdown(self, context: Any) -> None:
        self.events.append(f"stop {context.name}")


class Closable:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def close(self) -> None:
        self.events.append("closed resource")


def test_startup_in_load_order_shutdown_in_reverse_then_resources_close(hostd_data_dir: Path) -> None:
    events: list[str] = []
    host = make_host(hostd_data_dir, {"one": Recorder("one", events), "two": Recorder("two", events)})
    opened = host.contexts["one"].resource("store", lambda: Closable(events))
    assert host.contexts["one"].resource("store", lambda: Closable(events)) is opened  # opened once
    host.startup()
    host.shutdown()
    assert events == ["start one", "start two", "stop two", "stop one", "closed resource"]


@pytest.mark.anyio
async def test_a_resource_opens_on_first_use_once_and_closes_at_shutdown(hostd_data_dir: Path) -> None:
    """A store a tool opens through ``resource()`` is not opened by start-up or tool listing,
    is opened by the first call that needs it, reused by the next, and closed at shut-down."""
    events: list[str] = []

    def open_db() -> Closable:
        events.append("opened db")
        return Closable(events)

    class Plugin:
        @hookimpl
        def hostd_register_tools(self, register: Any, context: Any) -> None:
            def use_db() -> Answer:
                """Open the store on first use."""
                return Answer(value=str(id(context.resource("db", open_db))))

            register(use_db)

    async with in_memory_client(["p"], data_dir=hostd_data_dir, extra_plugins={"p": Plugin()}) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["use_db"]
        assert events == []  # started, tools listed: nothing opened yet
        first = envelope_of(await client.call_tool("use_db", {}))
        assert events == ["opened db"]
        second = envelope_of(await client.call_tool("use_db", {}))
        assert second["value"] == first["value"]  # the same store...
        assert events == ["opened db"]  # ...not opened again
    assert events == ["opened db", "closed resource"]


class PlainSettings:
    """Looks like a settings class, but is not a pydantic model."""

    level: int = 1


@dataclass
class DataclassSettings:
    level: int = 1


@pytest.mark.parametrize(
    "model", [PlainSettings, DataclassSettings, {"level": int}], ids=["plain-class", "dataclass", "dict"]
)
def test_plugin_settings_model_must_be_pydantic(hostd_data_dir: Path, model: object) -> None:
    class Plugin:
        @hookimpl
        def hostd_settings_model(self) -> object:
            return model

    with pytest.raises(HostError, match=r"plugins\.p: hostd_settings_model must return a pydantic BaseModel"):
        make_host(hostd_data_dir, {"p": Plugin()}, {"plugins": {"p": {"level": "7"}}})


def test_a_pydantic_settings_model_validates_and_coerces(hostd_data_dir: Path) -> None:
    class Settings(BaseModel):
        level: int = 1

    class Plugin:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return Settings

    host = make_host(hostd_data_dir, {"p": Plugin()}, {"plugins": {"p": {"level": "7"}}})
    assert host.contexts["p"].settings == Settings(level=7)


def test_a_plugin_may_narrow_allowed_roots_but_not_widen_them(tmp_path: Path) -> None:
    inside, outside = tmp_path / "root" / "sub", tmp_path / "elsewhere"
    inside.mkdir(parents=True)
    outside.mkdir()
    base = {"allowed_roots": [str(tmp_path / "root")]}
    host = make_host(
        tmp_path / "d",
        {"p": OneToolPlugin("t")},
        {**base, "plugins": {"p": {"allowed_roots": [str(inside)]}}},
    )
    assert host.contexts["p"].allowed_roots == [inside]
    with pytest.raises(HostError, match="outside the host-wide allowed_roots"):
        make_host(
            tmp_path / "d",
            {"p": OneToolPlugin("t")},
            {**base, "plugins": {"p": {"allowed_roots": [str(outside)]}}},
        )


def test_two_plugins_offering_one_service_name_is_a_startup_error(hostd_data_dir: Path) -> None:
    class Offer:
        @hookimpl
        def hostd_register_services(self, register: Any) -> None:
            register("shared.name", object())

    with pytest.raises(HostError, match=r"service 'shared\.name' is offered by both 'a' and 'b'"):
        make_host(hostd_data_dir, {"a": Offer(), "b": Offer()})


def test_a_host_that_never_started_shuts_nothing_down(hostd_data_dir: Path) -> None:
    events: list[str] = []
    host = make_host(hostd_data_dir, {"one": Recorder("one", events)})
    host.shutdown()
    assert events == []


def test_a_resource_factory_may_open_another_resource(tmp_path: Path) -> None:
    """A store opened through resource() may open its database through resource() too."""
    import threading

    from hostd.core.context import PluginRuntime, ServiceRegistry

    context = PluginRuntime(
        name="p", settings=None, language="en", host_data_dir=tmp_path, services=ServiceRegistry()
    )
    finished = threading.Event()

    def open_store() -> dict[str, object]:
        return {"database": context.resource("database", object)}

    def run() -> None:
        store = context.resource("store", open_store)
        assert store["database"] is context.resource("database", object)
        finished.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert finished.is_set(), "resource() deadlocked when a factory opened another resource"


def test_fetching_counts_downloads_in_flight_from_threads_and_after_failures(tmp_path: Path) -> None:
    """``ctx.fetching()`` (what feeds ``hostd_fetches_in_flight``): one count per block running,
    from any thread, back down when the block raises."""
    import threading

    from hostd.core.context import PluginRuntime, ServiceRegistry

    context = PluginRuntime(
        name="p", settings=None, language="en", host_data_dir=tmp_path, services=ServiceRegistry()
    )
    inside = threading.Barrier(9)
    leave = threading.Event()

    def download() -> None:
        with context.fetching():
            inside.wait(10)
            leave.wait(10)

    threads = [threading.Thread(target=download) for _ in range(8)]
    for thread in threads:
        thread.start()
    inside.wait(10)
    assert context.fetches_in_flight == 8
    leave.set()
    for thread in threads:
        thread.join(10)
    assert context.fetches_in_flight == 0
    with pytest.raises(OSError, match="connection reset"), context.fetching():
        raise OSError("connection reset")
    assert context.fetches_in_flight == 0
