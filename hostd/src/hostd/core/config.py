"""The YAML config: where it is found, what it may say, and which profile runs.

Discovery never looks in the working directory: a cloned repository must not be able to
widen roots or open ports by shipping a config file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hostd.core.errors import HostError
from hostd.core.i18n import Language, language_from_locale
from hostd.core.oauth_settings import OAuthConfig
from hostd.core.ops_settings import AuditConfig, LimitsConfig, MetricsConfig

DEFAULT_PROFILE = "default"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TransportConfig(_Strict):
    type: Literal["stdio", "http", "sse"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token_env: str | None = Field(default=None, description="environment variable holding the access token")
    allowed_hosts: list[str] = Field(default_factory=list, description="Host header values clients send")
    allowed_origins: list[str] = Field(default_factory=list, description="extra browser Origins to accept")
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="request body cap (413 above); each accepted byte costs a few bytes of server memory",
    )
    header_timeout: float = Field(
        default=10.0, gt=0, le=3600, description="seconds a connection may take to send its request headers"
    )
    body_timeout: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="seconds to receive a whole request body (408 above)",
    )
    idle_timeout: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="seconds a kept-alive connection may wait for a request",
    )
    max_connections: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="open connections at once; more get 503 and are closed",
    )
    max_streams_per_member: int = Field(
        default=8,
        ge=1,
        le=100_000,
        description="long-lived streams (GET /mcp, GET /sse, subscriptions/listen) one member may hold open; "
        "one more gets 429 (kept below max_connections)",
    )
    failed_signins_per_minute: int = Field(
        default=20,
        ge=1,
        le=100_000,
        description="refused tokens (bearer, X-API-Key, the dashboard's sign-in form) per client address "
        "and minute; beyond it that address gets 429 with Retry-After",
    )
    stateless: bool = Field(
        default=False,
        description="no server-side MCP session: any replica behind a load balancer answers any request",
    )
    max_sessions: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="stateful MCP sessions open at once (each holds ~40 KB); one more gets 503",
    )
    session_idle_timeout: float = Field(
        default=900.0,
        gt=0,
        le=86_400,
        description="seconds a stateful session may go without a request before it is closed",
    )
    tokens_file: str | None = Field(
        default=None,
        description="YAML mapping member-name: token (or {token, profile}); reloaded on change and on SIGHUP",
    )
    oauth: OAuthConfig | None = Field(
        default=None,
        description="sign members in with an OAuth 2.1 / OIDC identity provider (MCP authorization)",
    )
    metrics: MetricsConfig | None = Field(
        default=None, description="Prometheus metrics at /metrics (or on a port of their own)"
    )
    state_secret_env: str | None = Field(
        default=None,
        description="environment variable holding the secret (32+ bytes) that seals 2026-07-28 requestState, "
        "shared by every replica",
    )
    dashboard: bool = Field(
        default=False,
        description="serve the dashboard at /ui on this port too (members sign in with their tokens)",
    )
    shutdown_grace_seconds: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="on SIGTERM, seconds to let requests in flight finish before they are cut",
    )

    @model_validator(mode="after")
    def _dashboard_has_a_sign_in(self) -> TransportConfig:
        """With ``oauth``, members sign in at the identity provider, which the dashboard does not
        (yet) do: without a tokens file it would have no way to tell who is signing in."""
        if self.dashboard and self.oauth is not None and self.tokens_file is None:
            raise ValueError(
                "transport.dashboard: true with transport.oauth needs transport.tokens_file: dashboard "
                "members sign in with a token from that file (signing in through the identity provider "
                "is not offered yet); add transport.tokens_file or set transport.dashboard: false"
            )
        return self

    @model_validator(mode="after")
    def _streams_below_connections(self) -> TransportConfig:
        explicit = "max_streams_per_member" in self.model_fields_set
        if explicit and self.max_streams_per_member >= self.max_connections:
            raise ValueError(
                f"max_streams_per_member ({self.max_streams_per_member}) must be below max_connections "
                f"({self.max_connections}): one member's streams must leave connections for the others"
            )
        return self


class ToolSelection(_Strict):
    tier: Literal["core", "all"] = Field(
        default="all", description="core: the plugin's everyday tools only; all: every tool"
    )
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    prefix: str = ""


class ProfileConfig(_Strict):
    plugins: list[str] | None = Field(default=None, description="entry-point names; omitted: every installed")
    transport: TransportConfig = Field(default_factory=TransportConfig)
    tools: dict[str, ToolSelection] = Field(default_factory=dict)
    apps: bool = Field(
        default=True,
        description="offer the plugins' views inside the chat (MCP Apps, ui:// resources named in each "
        "tool's _meta.ui); false: tools are listed without them",
    )


class StorageConfig(_Strict):
    """The team database: memory, tasks and deep-thinking keep everything there instead of local files."""

    url_env: str = Field(
        description="environment variable holding the postgresql:// URL (the URL never sits in the YAML)",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
    )
    migrate: bool = Field(default=True, description="apply pending schema migrations when serving starts")
    pool_size: int = Field(default=8, ge=1, le=100, description="connections per plugin and process")
    connect_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    statement_timeout_ms: int = Field(default=30_000, ge=100, le=3_600_000)


class HostConfig(_Strict):
    data_dir: str | None = None
    storage: StorageConfig | None = None
    audit: AuditConfig | None = Field(
        default=None, description="record every tool call (hostd audit reads it)"
    )
    limits: LimitsConfig | None = Field(default=None, description="calls per member and tool (token buckets)")
    language: Language | None = None
    allowed_roots: list[str] | None = None
    profiles: dict[str, ProfileConfig] = Field(default_factory=dict)
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)


@dataclass(frozen=True)
class LoadedConfig:
    """The config after discovery and profile choice: what one server instance runs."""

    source: Path | None
    config: HostConfig
    profile_name: str
    profile: ProfileConfig
    data_dir: Path
    language: Language

    @property
    def database_url(self) -> str | None:
        """The team database's URL from ``storage.url_env``; None when ``storage`` is absent."""
        storage = self.config.storage
        if storage is None:
            return None
        url = os.environ.get(storage.url_env, "").strip()
        if not url:
            raise HostError(
                f"storage.url_env names ${storage.url_env}, which is not set: export it as "
                "postgresql://USER@HOST:5432/DATABASE (or remove `storage` to keep the local files)"
            )
        from hostd_db import is_postgres_url

        if not is_postgres_url(url):
            raise HostError(
                f"${storage.url_env} must be a postgresql:// URL (it starts with {url.split(':', 1)[0]!r})"
            )
        return url

    @property
    def allowed_roots(self) -> list[Path] | None:
        if self.config.allowed_roots is None:
            return None
        return [Path(os.path.expanduser(root)) for root in self.config.allowed_roots]


def user_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("hostd", appauthor=False)) / "config.yaml"


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("hostd", appauthor=False))


def discover_config_path(explicit: str | None) -> Path | None:
    """``--config``, else ``$HOSTD_CONFIG``, else the user config dir; never the working dir."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise HostError(f"config file not found: {path}")
        return path
    from_env = os.environ.get("HOSTD_CONFIG")
    if from_env:
        path = Path(from_env).expanduser()
        if not path.is_file():
            raise HostError(f"config file named by $HOSTD_CONFIG not found: {path}")
        return path
    candidate = user_config_path()
    return candidate if candidate.is_file() else None


def format_validation_error(exc: ValidationError, prefix: str = "") -> str:
    lines = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in (prefix, *error["loc"]) if part != "")
        problem = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append(f"{location or '(top level)'}: {problem}")
    return "\n".join(lines)


def parse_config(text: str, source: str) -> HostConfig:
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HostError(f"{source}: not valid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise HostError(f"{source}: the top level must be a mapping of keys")
    try:
        return HostConfig.model_validate(raw)
    except ValidationError as exc:
        raise HostError(f"{source}: invalid config\n{format_validation_error(exc)}") from None


def choose_profile(
    config: HostConfig, requested: str | None, preferred: str | None = None
) -> tuple[str, ProfileConfig]:
    """``--profile``/``$HOSTD_PROFILE``, else ``preferred`` when the config has a profile of that
    name (``client-config cursor``: the profile ``cursor``), else ``default``, else the only one,
    else an error."""
    name = requested or os.environ.get("HOSTD_PROFILE") or None
    if not name and preferred is not None and preferred in config.profiles:
        name = preferred
    if name:
        if name in config.profiles:
            return name, config.profiles[name]
        if not config.profiles and name == DEFAULT_PROFILE:
            return name, ProfileConfig()
        known = ", ".join(sorted(config.profiles)) or "(none: the built-in default serves every plugin)"
        raise HostError(f"unknown profile {name!r}; profiles in the config: {known}")
    if not config.profiles:
        return DEFAULT_PROFILE, ProfileConfig()
    if DEFAULT_PROFILE in config.profiles:
        return DEFAULT_PROFILE, config.profiles[DEFAULT_PROFILE]
    if len(config.profiles) == 1:
        only = next(iter(config.profiles))
        return only, config.profiles[only]
    raise HostError(
        "several profiles and none named 'default': choose one with --profile or $HOSTD_PROFILE; "
        f"profiles: {', '.join(sorted(config.profiles))}"
    )


def load_config(
    explicit_path: str | None = None, profile: str | None = None, *, preferred: str | None = None
) -> LoadedConfig:
    source = discover_config_path(explicit_path)
    config = parse_config(source.read_text(encoding="utf-8"), str(source)) if source else HostConfig()
    return _loaded(source, config, *choose_profile(config, profile, preferred))


def load_every_profile(explicit_path: str | None = None) -> list[LoadedConfig]:
    """Each profile of the config (the built-in ``default`` when it has none), for ``config check``."""
    source = discover_config_path(explicit_path)
    config = parse_config(source.read_text(encoding="utf-8"), str(source)) if source else HostConfig()
    if not config.profiles:
        return [_loaded(source, config, DEFAULT_PROFILE, ProfileConfig())]
    return [_loaded(source, config, name, profile) for name, profile in config.profiles.items()]


def _loaded(
    source: Path | None, config: HostConfig, profile_name: str, profile_config: ProfileConfig
) -> LoadedConfig:
    env_data_dir = os.environ.get("HOSTD_DATA_DIR")
    if env_data_dir:
        data_dir = Path(env_data_dir).expanduser()
    elif config.data_dir:
        data_dir = Path(config.data_dir).expanduser()
        if not data_dir.is_absolute() and source is not None:
            data_dir = source.parent / data_dir
    else:
        data_dir = default_data_dir()
    language = config.language or language_from_locale()
    return LoadedConfig(source, config, profile_name, profile_config, data_dir, language)


def config_from_mapping(raw: dict[str, Any], profile: str | None = None, *, data_dir: Path) -> LoadedConfig:
    """A config built in code (tests, the testing fixtures), validated like a file."""
    try:
        config = HostConfig.model_validate(raw)
    except ValidationError as exc:
        raise HostError(f"invalid config\n{format_validation_error(exc)}") from None
    profile_name, profile_config = choose_profile(config, profile)
    language = config.language or language_from_locale()
    return LoadedConfig(None, config, profile_name, profile_config, data_dir, language)
