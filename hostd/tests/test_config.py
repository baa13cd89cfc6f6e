"""Config discovery, profile choice and validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd.core.config import choose_profile, load_config, parse_config
from hostd.core.errors import HostError


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No config anywhere: a private user config dir and no HOSTD_* variables."""
    for var in ("HOSTD_CONFIG", "HOSTD_PROFILE", "HOSTD_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.smoke
def test_no_config_means_builtin_default_profile_over_stdio(isolated: Path) -> None:
    loaded = load_config()
    assert loaded.source is None
    assert loaded.profile_name == "default"
    assert loaded.profile.plugins is None  # every installed plugin
    assert loaded.profile.transport.type == "stdio"
    assert loaded.data_dir == isolated / "xdg-data" / "hostd"


def test_a_config_in_the_working_directory_is_never_read(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = isolated / "cloned-repo"
    for name in ("hostd.yaml", "hostd.yml", "config.yaml", ".hostd.yaml"):
        write(
            repo / name, "allowed_roots: ['/']\nprofiles: {evil: {transport: {type: http, host: 0.0.0.0}}}\n"
        )
    write(repo / ".config" / "hostd" / "config.yaml", "allowed_roots: ['/']\n")
    monkeypatch.chdir(repo)
    loaded = load_config()
    assert loaded.source is None
    assert loaded.config.allowed_roots is None


def test_discovery_order_flag_then_env_then_user_dir(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = write(isolated / "xdg-config" / "hostd" / "config.yaml", "language: en\n")
    from_env = write(isolated / "env.yaml", "language: zh\n")
    flag = write(isolated / "flag.yaml", "language: en\ndata_dir: /tmp/flagdata\n")
    assert load_config().source == user
    monkeypatch.setenv("HOSTD_CONFIG", str(from_env))
    assert load_config().source == from_env
    assert load_config().language == "zh"
    assert load_config(str(flag)).source == flag


def test_missing_explicit_config_is_an_error(isolated: Path) -> None:
    with pytest.raises(HostError, match="config file not found"):
        load_config(str(isolated / "nope.yaml"))


def test_unknown_keys_are_errors_naming_their_location(isolated: Path) -> None:
    path = write(isolated / "c.yaml", "profiles:\n  cursor:\n    plugins: [memory]\n    transprt: {}\n")
    with pytest.raises(HostError, match=r"profiles\.cursor\.transprt: unknown key"):
        load_config(str(path))
    with pytest.raises(HostError, match=r"language: Input should be 'zh' or 'en'"):
        parse_config("language: fr\n", "x")
    with pytest.raises(HostError, match="not valid YAML"):
        parse_config("profiles: [unclosed\n", "x")


def test_profile_choice_default_then_only_then_error(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two = parse_config("profiles: {a: {plugins: []}, b: {plugins: []}}\n", "x")
    with pytest.raises(HostError, match=r"choose one with --profile.*a, b"):
        choose_profile(two, None)
    assert choose_profile(two, "b")[0] == "b"
    monkeypatch.setenv("HOSTD_PROFILE", "a")
    assert choose_profile(two, None)[0] == "a"
    monkeypatch.delenv("HOSTD_PROFILE")
    with pytest.raises(HostError, match="unknown profile 'c'; profiles in the config: a, b"):
        choose_profile(two, "c")
    one = parse_config("profiles: {only: {plugins: []}}\n", "x")
    assert choose_profile(one, None)[0] == "only"
    with_default = parse_config("profiles: {default: {plugins: []}, x: {}}\n", "x")
    assert choose_profile(with_default, None)[0] == "default"


def test_data_dir_from_config_then_env_override(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(isolated / "c.yaml", "data_dir: ~/hostd-data-test\n")
    assert load_config(str(path)).data_dir == Path("~/hostd-data-test").expanduser()
    monkeypatch.setenv("HOSTD_DATA_DIR", str(isolated / "override"))
    assert load_config(str(path)).data_dir == isolated / "override"


def test_language_defaults_from_the_locale(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert load_config().language == "zh"
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    assert load_config().language == "en"


def test_transport_settings_are_validated(isolated: Path) -> None:
    with pytest.raises(HostError, match=r"profiles\.t\.transport\.port"):
        parse_config("profiles: {t: {transport: {type: http, port: 70000}}}\n", "x")
    with pytest.raises(HostError, match=r"profiles\.t\.transport\.type"):
        parse_config("profiles: {t: {transport: {type: websocket}}}\n", "x")


@pytest.mark.parametrize("algorithm", ["none", "HS256"])
def test_oauth_accepts_asymmetric_algorithms_only(tmp_path: Path, algorithm: str) -> None:
    from hostd.core.config import config_from_mapping
    from hostd.core.errors import HostError

    oauth = {"issuer": "https://id.example", "algorithms": ["RS256", algorithm]}
    raw = {"profiles": {"team": {"transport": {"type": "http", "oauth": oauth}}}}
    with pytest.raises((HostError, ValueError)) as caught:
        config_from_mapping(raw, data_dir=tmp_path)
    assert "only asymmetric algorithms" in str(caught.value)


def test_oauth_on_a_public_bind_needs_the_resource_url() -> None:
    from hostd.core.config import TransportConfig
    from hostd.core.errors import HostError
    from hostd.protocol.guard import HttpPolicy

    transport = TransportConfig.model_validate(
        {
            "type": "http",
            "host": "0.0.0.0",
            "allowed_hosts": ["mcp.example:8765"],
            "oauth": {"issuer": "https://id.example"},
        }
    )
    with pytest.raises(HostError, match=r"transport\.oauth\.resource"):
        HttpPolicy(transport)
    with_resource = transport.model_copy(
        update={"oauth": transport.oauth.model_copy(update={"resource": "https://mcp.example/mcp"})}  # type: ignore[union-attr]
    )
    policy = HttpPolicy(with_resource)
    assert policy.oauth is not None
    assert policy.oauth.audience == "https://mcp.example/mcp"
    assert policy.oauth.metadata_url == "https://mcp.example/.well-known/oauth-protected-resource/mcp"
