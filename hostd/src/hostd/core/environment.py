"""What start-up needs from the machine: a data folder it can write and ports it can bind.

``hostd serve`` and ``hostd web`` stop on these with one line and exit code 3
(``EXIT_ENVIRONMENT``), never a traceback; ``hostd config check`` reports them all, each with
the config key to change.
"""

from __future__ import annotations

import errno
import os
import socket
import uuid
from pathlib import Path

from hostd.core.errors import HostError

#: The environment stops start-up: a data folder that cannot be written, a port in use.
EXIT_ENVIRONMENT = 3


class EnvironmentProblem(HostError):
    """A start-up problem of the machine, not of the config's syntax: exit code 3."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_ENVIRONMENT)


def _reason(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text


def data_dir_problem(path: Path) -> str | None:
    """Why the data folder cannot be written (created if missing, then a file written and
    removed in it), or None when it can."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".hostd-write-check-{uuid.uuid4().hex}"
        with probe.open("wb") as handle:
            handle.write(b"ok")
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as exc:
        where = exc.filename or path
        return (
            f"data_dir: the data folder {path} cannot be written ({where}: {_reason(exc)}): give the "
            "server's user write access, or point data_dir ($HOSTD_DATA_DIR) at a writable folder"
        )
    return None


def require_writable_data_dir(path: Path) -> None:
    problem = data_dir_problem(path)
    if problem is not None:
        raise EnvironmentProblem(problem)


def bind_listener(host: str, port: int, key: str) -> socket.socket:
    """A listening TCP socket on ``host:port``; a port in use (or an address this machine does not
    have) is one line naming the port and the config key ``key`` that set it."""
    address = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and address == "::":
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind((address, port))
        listener.listen(2048)
    except OSError as exc:
        listener.close()
        raise port_in_use(exc, host, port, key) from None
    return listener


def port_in_use(exc: OSError, host: str, port: int, key: str) -> EnvironmentProblem:
    """The one line for a port that could not be bound, naming the config key that set it."""
    if exc.errno == errno.EADDRINUSE:
        return EnvironmentProblem(
            f"{key}: port {port} on {host} is already in use by another process: stop it, "
            f"or choose another port with {key}"
        )
    return EnvironmentProblem(f"{key}: cannot listen on {host}:{port}: {_reason(exc)}")


def port_problem(host: str, port: int, key: str) -> str | None:
    """Why ``host:port`` cannot be bound now, or None (port 0 always can)."""
    if port == 0:
        return None
    try:
        bind_listener(host, port, key).close()
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def data_dir_check(path: Path) -> str | None:
    """``config check``'s look at the data folder, creating nothing: an existing folder must take
    a file (written and removed at once), a missing one must be creatable in its nearest parent."""
    if path.is_dir():
        return data_dir_problem(path)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        reason = f"{existing} is a file, not a folder (ENOTDIR)"
    elif not os.access(existing, os.W_OK | os.X_OK):
        reason = f"{existing} is not writable by this user (EACCES)"
    else:
        return None
    return (
        f"data_dir: the data folder {path} cannot be created: {reason}: point data_dir "
        "($HOSTD_DATA_DIR) at a writable folder"
    )


def readable_file_problem(path: Path, key: str) -> str | None:
    """Why the file ``key`` names cannot be read, or None."""
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        return f"{key}: cannot read {path}: {_reason(exc)}"
    return None


def identity_provider_warning(issuer: str, key: str, timeout: float) -> str | None:
    """Why the identity provider's metadata cannot be fetched now, or None. Only a warning: the
    provider may be down for a moment, and the server fetches it again when a token arrives."""
    import json
    import urllib.error
    import urllib.request

    from hostd.team.auth.keys import metadata_urls

    reasons = []
    for url in metadata_urls(issuer):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:  # the operator's issuer
                document = json.loads(answer.read(1024 * 1024))
            if isinstance(document, dict) and document.get("issuer"):
                return None
            reasons.append(f"{url}: not a metadata document")
        except (OSError, ValueError, urllib.error.URLError) as exc:
            reasons.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
    return (
        f"{key}: the identity provider's metadata could not be read ({'; '.join(reasons)}): members "
        "cannot sign in until it can"
    )
