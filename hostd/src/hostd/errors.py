"""The one error type tools raise, and the stable codes the envelope carries."""

from __future__ import annotations

from typing import Any

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
        "INTERNAL",
    }
)


class ToolError(Exception):
    """A failure the model can act on: becomes an ``isError`` envelope, never a traceback.

    ``message`` and ``hint`` are already in the caller's language (use
    ``ToolContext.text(en=..., zh=...)``); ``details`` must be JSON-serialisable.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        if not code or code.upper() != code or " " in code:
            raise ValueError(f"error codes are UPPER_SNAKE, got {code!r}")
        self.code = code
        self.message = message
        self.hint = hint
        self.details = details or {}


class HostError(Exception):
    """A start-up, config or usage problem: the CLI prints it and exits with ``exit_code``."""

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
