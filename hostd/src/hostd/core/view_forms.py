"""Small helpers every plugin's dashboard pages use: reading an optional field, and showing a
refused tool call in the page's error box. Part of the plugin API (``hostd.api``), beside the
page contract in ``view_api``.
"""

from __future__ import annotations

from hostd_errors import CodedError

from hostd.core.view_api import ViewRequest


def given(value: str | None) -> str | None:
    """A query or form value, ``None`` when missing or blank: an empty field means "not given"."""
    value = (value or "").strip()
    return value or None


def error_fields(request: ViewRequest, exc: CodedError) -> dict[str, str | None]:
    """A refused tool call as a page's error box shows it: message and hint in the reader's
    language, and the code (the ``error`` a plugin's template receives)."""
    message, hint, _ = exc.rendered(request.language)
    return {"message": message, "hint": hint, "code": exc.code}


__all__ = ["error_fields", "given"]
