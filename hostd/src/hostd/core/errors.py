"""The error tools raise, and the stable codes the envelope carries.

``HostError`` is the host's own (config and start-up problems) and is not part of the plugin API.
"""

from __future__ import annotations

from hostd_errors import CodedError

#: Codes every plugin may use; plugins add their own (INVALID_URL, CHALLENGE, ...).
STANDARD_CODES: frozenset[str] = frozenset(
    {
        "INVALID_ARGUMENT",
        "PATH_NOT_ALLOWED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "CONFLICT",
        "PERMISSION_DENIED",
        "DISK_FULL",
        "FILE_LOCKED",
        "PATH_TOO_LONG",
        "READ_ERROR",
        "WRITE_ERROR",
        "TIMEOUT",
        "TOO_LONG",
        "STORAGE_UNAVAILABLE",
        "INTERNAL",
    }
)


class ToolError(CodedError):
    """A failure the model can act on: becomes an ``isError`` envelope, never a traceback.

    ``message`` and ``hint`` are ``hostd.Text`` (a plain string where the words read the same
    in both languages); the host renders them in the server's language. ``details`` must be
    JSON-serialisable. Stores may raise it (or any ``hostd_errors.CodedError``) directly: the
    host answers every coded error the same way, so no plugin needs a translator of its own.
    """


class HostError(Exception):
    """A start-up, config or usage problem: the CLI prints it and exits with ``exit_code``."""

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
