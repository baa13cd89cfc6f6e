"""Team members: who an HTTP token belongs to, and which tools that member may use.

The tokens file is a YAML mapping, one member a line (``alice: <token>``) or with a profile
(``bob: {token: <token>, profile: readonly}``): a member with a profile sees and calls only
the tools that profile of the same config serves. ``transport.token_env`` keeps working: its
token belongs to the member ``default``. The file is read again when its modification time
changes (looked at no more than once a second) and on SIGHUP; a bad edit keeps the members
already loaded and logs the file's line, while a bad file at start-up stops the server.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

from hostd.core.errors import HostError
from hostd.core.identity import MEMBER_NAME, Member

logger = logging.getLogger("hostd.members")

MIN_TOKEN_LENGTH = 16
TOKEN_ENV_MEMBER = "default"
RELOAD_CHECK_SECONDS = 1.0


def token_digest(token: str) -> bytes:
    """Tokens are compared as SHA-256 digests: equal lengths, so a comparison leaks no length."""
    return hashlib.sha256(token.encode()).digest()


_digest = token_digest


class TokenBook:
    """Tokens and their members; ``identify`` compares a token with every one, with no early exit."""

    def __init__(self, entries: dict[str, tuple[str, Member]]) -> None:
        self._entries = [(_digest(token), member) for token, member in entries.values()]
        self._by_name = {member.name: (digest, member) for digest, member in self._entries}

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, name: str) -> tuple[bytes, Member] | None:
        """The member called ``name`` and their token's digest (the dashboard's cookies check it)."""
        return self._by_name.get(name)

    def members(self) -> list[Member]:
        """Every member, by name (their tokens stay here)."""
        return sorted((member for _, member in self._entries), key=lambda member: member.name)

    def identify(self, presented: str) -> Member | None:
        digest = _digest(presented)
        found: Member | None = None
        for known, member in self._entries:
            if hmac.compare_digest(digest, known):  # no break: the time does not say which matched
                found = member
        return found


def parse_tokens_file(
    text: str, source: str, known_profiles: Collection[str]
) -> dict[str, tuple[str, Member]]:
    """``{member: (token, Member)}`` from the file's text; a ``HostError`` naming the line otherwise."""
    import yaml

    def fail(line: int | None, problem: str) -> HostError:
        where = f"{source}:{line}" if line is not None else source
        return HostError(f"{where}: {problem}")

    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise fail(mark.line + 1 if mark else None, "not valid YAML") from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise fail(root.start_mark.line + 1, "the file must be a mapping of member-name: token")
    members: dict[str, tuple[str, Member]] = {}
    seen_tokens: dict[str, str] = {}
    for key_node, value_node in root.value:
        line = key_node.start_mark.line + 1
        name = key_node.value if isinstance(key_node, yaml.ScalarNode) else ""
        if not MEMBER_NAME.match(name):
            raise fail(line, f"member name {name!r} must match {MEMBER_NAME.pattern}")
        if name in members:
            raise fail(line, f"member {name!r} is listed twice")
        profile: str | None = None
        if isinstance(value_node, yaml.ScalarNode):
            token = value_node.value
        elif isinstance(value_node, yaml.MappingNode):
            fields = {k.value: v for k, v in value_node.value if isinstance(k, yaml.ScalarNode)}
            unknown = sorted(set(fields) - {"token", "profile"})
            if unknown or not all(isinstance(v, yaml.ScalarNode) for v in fields.values()):
                raise fail(line, f"member {name!r}: only 'token' and 'profile' may be given, as text")
            token = fields["token"].value if "token" in fields else ""
            if "profile" in fields:
                profile = fields["profile"].value
                if profile not in known_profiles:
                    known = ", ".join(sorted(known_profiles)) or "(none)"
                    raise fail(
                        line, f"member {name!r}: no profile {profile!r} in the config; profiles: {known}"
                    )
        else:
            raise fail(line, f"member {name!r}: give a token, or {{token: ..., profile: ...}}")
        if len(token) < MIN_TOKEN_LENGTH:
            raise fail(line, f"member {name!r}: the token must be at least {MIN_TOKEN_LENGTH} characters")
        if token in seen_tokens:
            raise fail(line, f"member {name!r} has the same token as {seen_tokens[token]!r}")
        seen_tokens[token] = name
        members[name] = (token, Member(name, profile))
    return members


class MemberDirectory:
    """The members an HTTP server accepts, kept current with the tokens file.

    ``identify`` is called on every request: it re-reads the file when its modification time
    (looked at once a second at most) has changed; ``reload`` does it at once (SIGHUP).
    """

    def __init__(
        self,
        *,
        env_token: str | None,
        tokens_file: Path | None,
        known_profiles: Collection[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._env_token = env_token
        self._tokens_file = tokens_file
        self._known_profiles = frozenset(known_profiles)
        self._clock = clock
        self._lock = threading.Lock()
        self._checked_at = clock()
        self._stamp = self._file_stamp()
        self._book = self._build(self._read_file() if tokens_file else {})

    @property
    def requires_token(self) -> bool:
        return self._env_token is not None or self._tokens_file is not None

    def _file_stamp(self) -> tuple[int, int] | None:
        if self._tokens_file is None:
            return None
        try:
            stat = self._tokens_file.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _read_file(self) -> dict[str, tuple[str, Member]]:
        assert self._tokens_file is not None
        try:
            text = self._tokens_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise HostError(
                f"transport.tokens_file: cannot read {self._tokens_file}: {exc.strerror}"
            ) from None
        return parse_tokens_file(text, str(self._tokens_file), self._known_profiles)

    def _build(self, from_file: dict[str, tuple[str, Member]]) -> TokenBook:
        entries = dict(from_file)
        if self._env_token is not None:
            if TOKEN_ENV_MEMBER in entries:
                raise HostError(
                    f"{self._tokens_file}: member {TOKEN_ENV_MEMBER!r} is the owner of transport.token_env's "
                    "token; name the member in the file differently"
                )
            entries[TOKEN_ENV_MEMBER] = (self._env_token, Member(TOKEN_ENV_MEMBER))
        return TokenBook(entries)

    def reload(self) -> bool:
        """Read the tokens file again; on a bad file keep the current members. True when reloaded."""
        if self._tokens_file is None:
            return False
        with self._lock:
            self._stamp = self._file_stamp()
            try:
                book = self._build(self._read_file())
            except HostError as exc:
                logger.error("tokens file not reloaded, the members loaded before stay: %s", exc)
                return False
            self._book = book
        logger.info("tokens file reloaded: %d member(s)", len(book))
        return True

    def _reload_if_changed(self) -> None:
        now = self._clock()
        if now - self._checked_at < RELOAD_CHECK_SECONDS:
            return
        self._checked_at = now
        if self._file_stamp() != self._stamp:
            self.reload()

    def lookup(self, name: str) -> tuple[bytes, Member] | None:
        """The member called ``name`` now and their token's digest; ``None`` once removed."""
        if self._tokens_file is not None:
            self._reload_if_changed()
        return self._book.lookup(name)

    def members(self) -> list[Member]:
        """Every member now (names and profiles, never tokens), by name."""
        if self._tokens_file is not None:
            self._reload_if_changed()
        return self._book.members()

    def identify(self, presented: str) -> Member | None:
        """The member whose token this is, or ``None`` (unknown or removed)."""
        if self._tokens_file is not None:
            self._reload_if_changed()
        return self._book.identify(presented)


def member_directory_from_env(
    token_env: str | None, tokens_file: str | None, known_profiles: Collection[str]
) -> MemberDirectory:
    """The directory a transport section describes; ``HostError`` when its token or file is unusable."""
    env_token: str | None = None
    if token_env:
        env_token = os.environ.get(token_env, "")
        if not env_token:
            raise HostError(
                f"transport.token_env names ${token_env}, but it is empty or unset: "
                "export the token before starting the server"
            )
    path = Path(tokens_file).expanduser() if tokens_file else None
    return MemberDirectory(env_token=env_token, tokens_file=path, known_profiles=known_profiles)
